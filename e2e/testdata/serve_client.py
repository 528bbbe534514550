#!/usr/bin/env python3
"""A chat backend written in Python (standard library only) driving
`agenthost serve`: it creates a session, posts a turn, reads the events as
Server-Sent Events, drops the connection after the tool call, resumes with
Last-Event-ID, and checks the result.

Usage: serve_client.py BASE_URL  (env: AGENTHOST_TOKEN, SESSION_VALUE)
Prints one JSON object per line: {"step": ...} notes and every event.
Exits 0 when the turn ended with the tool's result, 1 otherwise.
"""
import json
import os
import sys
import urllib.request

BASE = sys.argv[1].rstrip("/")
TOKEN = os.environ["AGENTHOST_TOKEN"]
VALUE = os.environ["SESSION_VALUE"]
bodies = []  # every answer, to check that the session value never comes back


def say(obj):
    print(json.dumps(obj), flush=True)


def request(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + TOKEN)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    return urllib.request.urlopen(req, timeout=120)


def events(resp, stop_after=None):
    """Yields (id, event, data) of an SSE response; stops after the event
    named stop_after, or at session_end."""
    ev_id, name, data = None, None, []
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        bodies.append(line)
        if line == "":
            if data:
                obj = json.loads("\n".join(data))
                yield ev_id, name, obj
                if name == stop_after or name == "session_end":
                    return
            ev_id, name, data = None, None, []
        elif line.startswith("id:"):
            ev_id = int(line[3:].strip())
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


def main():
    with request("POST", "/v1/sessions", {"subject": "carol", "trustLevel": 2, "values": {"token": VALUE}}) as r:
        raw = r.read().decode()
        bodies.append(raw)
        session = json.loads(raw)
    assert r.status == 201, r.status
    assert session["valueNames"] == ["token"], session
    say({"step": "session", "id": session["id"]})

    seen = []
    resp = request("POST", "/v1/sessions/%s/turns" % session["id"], {"message": "delete row 7"})
    location = resp.headers["Location"]
    assert resp.headers["Content-Type"].startswith("text/event-stream"), resp.headers["Content-Type"]
    for ev_id, name, obj in events(resp, stop_after="tool_call"):
        seen.append((ev_id, name))
        say({"id": ev_id, "event": obj})
    resp.close()  # the connection drops while the call waits for approval
    last = seen[-1][0]
    say({"step": "dropped", "lastEventId": last, "resume": location})

    end = None
    with request("GET", location, headers={"Last-Event-ID": str(last)}) as resp:
        for ev_id, name, obj in events(resp):
            seen.append((ev_id, name))
            say({"id": ev_id, "event": obj})
            if name == "session_end":
                end = obj
    ids = [i for i, _ in seen]
    if ids != list(range(1, len(ids) + 1)):
        say({"step": "fail", "why": "event ids are not 1..n without gaps or repeats", "ids": ids})
        return 1
    names = [n for _, n in seen]
    if "tool_result" not in names or end is None:
        say({"step": "fail", "why": "no tool_result or no session_end", "names": names})
        return 1

    with request("GET", "/v1/audit?sessionId=" + session["id"]) as r:
        raw = r.read().decode()
        bodies.append(raw)
        audit = json.loads(raw)
    approvers = [v["id"] for rec in audit["records"] if rec["phase"] == "decision" for v in rec["approvers"]]
    say({"step": "audit", "approvers": approvers})

    with request("DELETE", "/v1/sessions/" + session["id"]) as r:
        assert r.status == 204, r.status

    if any(VALUE in b for b in bodies):
        say({"step": "fail", "why": "an answer held the session value"})
        return 1
    say({"step": "done", "result": end["result"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
