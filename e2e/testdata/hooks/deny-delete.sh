#!/bin/sh
# A Claude Code PreToolUse hook, unchanged: it reads the hook input on
# stdin and denies every MCP tool whose name ends in "delete_order".
# Plain POSIX tools only (no jq).
input=$(cat)
tool=$(printf '%s' "$input" | sed -n 's/.*"tool_name":"\([^"]*\)".*/\1/p')
case "$tool" in
mcp__*__delete_order)
	printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"deleting orders is frozen during the audit"}}'
	;;
esac
exit 0
