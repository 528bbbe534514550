#!/bin/sh
# A Claude Code PostToolUse hook: when the tool's response holds something
# shaped like a card number, the model gets a redacted text instead.
input=$(cat)
if printf '%s' "$input" | grep -Eq '[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{4}'; then
	printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":"order 7: card [redacted by hook]"}}'
fi
exit 0
