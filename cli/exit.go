package cli

import "github.com/bdclaim/bd-claim/claim"

// Exit statuses. Every path out of Run goes through this one table.
const (
	ExitClaimed    = 0 // claimed (or, with --dry-run, a candidate found)
	ExitUnexpected = 1 // UNEXPECTED
	ExitInvalid    = 2 // INVALID_ARGUMENT
	ExitNoIssue    = 3 // no issue available for these filters
	ExitBusy       = 4 // SQLITE_BUSY, BUSY, DB_UNAVAILABLE: retry later
	ExitNotFound   = 5 // WORKSPACE_NOT_FOUND, DB_NOT_FOUND, DB_ACCESS_DENIED
	ExitSchema     = 6 // SCHEMA_INCOMPATIBLE
	ExitRefused    = 7 // ALREADY_CLAIMED, NOT_CLAIMABLE, ISSUE_NOT_FOUND
	// ExitInterrupted is 128 + SIGINT, what a shell expects of a command a
	// signal stopped, so that a loop around bd-claim stops too.
	ExitInterrupted = 130 // INTERRUPTED (SIGINT or SIGTERM)
)

var exitCodes = map[claim.Code]int{
	claim.EUnexpected:    ExitUnexpected,
	claim.EInvalid:       ExitInvalid,
	claim.EBusy:          ExitBusy,
	claim.EWorkspaceBusy: ExitBusy,
	claim.EWorkspace:     ExitNotFound,
	claim.EDBNotFound:    ExitNotFound,
	claim.EUnavailable:   ExitBusy,
	claim.EAccess:        ExitNotFound,
	claim.ESchema:        ExitSchema,
	claim.EAlready:       ExitRefused,
	claim.ENotClaimable:  ExitRefused,
	claim.ENotFound:      ExitRefused,
	claim.EInterrupted:   ExitInterrupted,
}

// exitCode maps an error to its exit status.
func exitCode(err error) int { return exitCodes[claim.ErrorCode(err)] }
