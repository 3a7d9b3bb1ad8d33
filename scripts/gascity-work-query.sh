#!/bin/sh
# gascity-work-query.sh TARGET: a Gas City work_query backed by bd-claim.
#
# Prints bd's JSON, as `bd ready --claim --json` does: `[]`, or a list of one
# issue. TARGET is the agent's routed name, the value of the issues'
# gc.routed_to metadata (the name Gas City routes work to: the agent's
# qualified name, or its pool's).
#
# - Run by a session (GC_SESSION_ID set): the issue the agent already holds
#   in progress, routed to TARGET, if any (bd-claim --resume renews its
#   lease); otherwise one ready issue routed to TARGET, claimed atomically
#   for the agent. The agent's name is bd's actor: $BEADS_ACTOR, else
#   $BD_ACTOR.
# - Run without a session (the controller's probe for demand): the same
#   query, but it only looks (--dry-run): the issue the session would get,
#   held or ready; nothing is claimed or renewed.
#
# Exit status 0 with `[]` when nothing is there; an error (no workspace, a
# store that does not answer) is bd-claim's exit status, with its error
# JSON on stderr, so that stdout stays parseable.
#
# BD_CLAIM names the bd-claim binary (default: bd-claim on PATH).
set -u

target=${1-}
if [ -z "$target" ]; then
	echo "gascity-work-query: give the routed target (gc.routed_to) as the first argument" >&2
	exit 2
fi
bdclaim=${BD_CLAIM:-bd-claim}

if [ -n "${GC_SESSION_ID-}" ]; then
	exec "$bdclaim" --bd-json --resume --quiet --metadata-field "gc.routed_to=$target"
fi
# The probe has no session and may have no actor: any name does to look.
exec "$bdclaim" --bd-json --resume --dry-run --quiet --agent "${BEADS_ACTOR:-${BD_ACTOR:-gc-probe}}" \
	--metadata-field "gc.routed_to=$target"
