package claim

import (
	"github.com/bdclaim/bd-claim/claim/engine"
)

// Code classifies every error bd-claim reports. The CLI maps each code to an
// exit status; library users switch on ErrorCode(err).
type Code = engine.Code

// The error codes of the JSON contract.
const (
	EUnexpected    = engine.EUnexpected    // a bug or an I/O failure nobody planned for
	EInvalid       = engine.EInvalid       // bad flag, agent name, priority...
	EBusy          = engine.EBusy          // SQLite: the database stayed locked past the timeout and retries
	EWorkspaceBusy = engine.EWorkspaceBusy // Dolt: the other writers kept their turns past the wait, or kept conflicting
	EWorkspace     = engine.EWorkspace     // no .beads directory could be found
	EDBNotFound    = engine.EDBNotFound    // a workspace without a database, a missing --db file, no such database on the Dolt server
	EUnavailable   = engine.EUnavailable   // the Dolt server cannot be reached (refused, timed out, connection lost): retryable
	EAccess        = engine.EAccess        // the Dolt server refused the login, or a write to a read-only user
	ESchema        = engine.ESchema        // Dolt, beads_rust, not SQLite, corrupt, missing columns
	EAlready       = engine.EAlready       // --id: someone else holds the issue
	ENotClaimable  = engine.ENotClaimable  // --id: the issue exists but is not ready
	ENotFound      = engine.ENotFound      // --id: no such issue
	EInterrupted   = engine.EInterrupted   // a signal (or a cancelled context) stopped the command before it wrote anything
)

// Error is a classified error with a message written for the person or
// agent that has to act on it.
type Error = engine.Error

// Errorf builds an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return engine.Errorf(code, format, args...)
}

// ErrorCode returns the code of err, EUnexpected for unclassified errors and
// "" for nil.
func ErrorCode(err error) Code { return engine.ErrorCode(err) }

// ErrorMessage returns the message of a classified error, or err's text.
func ErrorMessage(err error) string { return engine.ErrorMessage(err) }

// classify turns a driver error into a coded error whose message says what
// to do (engine.Classify).
func classify(err error, doing string, code func(error) (Code, string, bool)) error {
	return engine.Classify(err, doing, code)
}
