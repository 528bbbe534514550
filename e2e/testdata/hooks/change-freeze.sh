#!/bin/sh
# A Claude Code PermissionRequest hook: it votes deny for every MCP tool
# whose name starts with "drop_" and allow for the others.
input=$(cat)
tool=$(printf '%s' "$input" | sed -n 's/.*"tool_name":"\([^"]*\)".*/\1/p')
case "$tool" in
mcp__*__drop_*)
	printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"change freeze until Monday"}}}'
	;;
*)
	printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'
	;;
esac
