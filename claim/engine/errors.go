// Package engine is the seam between bd-claim's domain (package claim) and
// its database engines (packages claim/sqlite and claim/dolt): the
// interface each engine implements, one method per operation of the claim
// lifecycle, and the types that cross it. Neither side imports the other:
// package claim holds the rules and decisions, an engine package holds its
// SQL, its transaction frame and its driver's errors, and both speak in
// these types. package claim/engines opens a workspace with its engine.
package engine

import (
	"context"
	"errors"
	"fmt"
)

// Code classifies every error bd-claim reports. The CLI maps each code to an
// exit status; library users switch on claim.ErrorCode(err). An engine
// gives each error of its driver a code (Engine.Code).
type Code string

// The error codes of the JSON contract.
const (
	EUnexpected    Code = "UNEXPECTED"          // a bug or an I/O failure nobody planned for
	EInvalid       Code = "INVALID_ARGUMENT"    // bad flag, agent name, priority...
	EBusy          Code = "SQLITE_BUSY"         // SQLite: the database stayed locked past the timeout and retries
	EWorkspaceBusy Code = "BUSY"                // Dolt: the other writers kept their turns past the wait, or kept conflicting
	EWorkspace     Code = "WORKSPACE_NOT_FOUND" // no .beads directory could be found
	EDBNotFound    Code = "DB_NOT_FOUND"        // a workspace without a database, a missing --db file, no such database on the Dolt server
	EUnavailable   Code = "DB_UNAVAILABLE"      // the Dolt server cannot be reached (refused, timed out, connection lost): retryable
	EAccess        Code = "DB_ACCESS_DENIED"    // the Dolt server refused the login, or a write to a read-only user
	ESchema        Code = "SCHEMA_INCOMPATIBLE" // Dolt, beads_rust, not SQLite, corrupt, missing columns
	EAlready       Code = "ALREADY_CLAIMED"     // --id: someone else holds the issue
	ENotClaimable  Code = "NOT_CLAIMABLE"       // --id: the issue exists but is not ready
	ENotFound      Code = "ISSUE_NOT_FOUND"     // --id: no such issue
	EInterrupted   Code = "INTERRUPTED"         // a signal (or a cancelled context) stopped the command before it wrote anything
)

// Error is a classified error with a message written for the person or
// agent that has to act on it.
type Error struct {
	Code    Code
	Message string
	// Holder names the agent that holds the issue, for EAlready.
	Holder string
	// HolderClaimID is the holder's claim_id, for EAlready when known.
	HolderClaimID int64
	// Err is the underlying error, if any (a driver error, context.Canceled...).
	Err error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, EUnexpected for unclassified errors and
// "" for nil.
func ErrorCode(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EUnexpected
	}
}

// ErrorMessage returns the message of a classified error, or err's text.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// Classify turns a driver error into a coded error whose message says what
// to do, keeping the driver's text as detail: the engine's reading of its
// driver's errors (engine.code) says which code and what to do.
func Classify(err error, doing string, engine func(error) (Code, string, bool)) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: EInterrupted, Message: "interrupted before it could " + doing + "; nothing was written", Err: err}
	}
	code, detail := EUnexpected, err.Error()
	if c, d, ok := engine(err); ok {
		code, detail = c, d+" ("+detail+")"
	}
	e = Errorf(code, "could not %s: %s", doing, detail)
	e.Err = err
	return e
}

// Plural is "1 thing" or "n things", for messages.
func Plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
