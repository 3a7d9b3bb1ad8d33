package claim

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The requests of the claim lifecycle and their validation: the one place
// that decides what a well-formed request is. The CLI builds a request from
// its flags and calls Validate before it opens the workspace; every Store
// method calls it again before it touches the database.

// Request is one claim.
type Request struct {
	Agent   string
	Filters Filters
	ID      string // claim this issue only (compare-and-swap); "" = the next ready one
	DryRun  bool   // report what would be claimed, change nothing
	// ClaimID, with ID, fences a re-claim: it succeeds only while Agent
	// still holds the issue under this claim.
	ClaimID int64
	Lease   time.Duration // lease of the claim; 0 = none (held until released)
	MaxHeld int           // claim nothing new while Agent holds this many in_progress issues; 0 = no limit
	Wait    time.Duration // when nothing is claimable, keep watching this long
}

// Validate checks the request and normalises its filters (see
// Filters.Validate).
func (req *Request) Validate() error {
	if err := ValidateAgent(req.Agent); err != nil {
		return err
	}
	if err := req.Filters.Validate(); err != nil {
		return err
	}
	if err := checkLength("the issue id", req.ID); err != nil {
		return err
	}
	if err := checkClaimID(req.ClaimID); err != nil {
		return err
	}
	if err := checkLease(req.Lease); err != nil {
		return err
	}
	switch {
	case req.ClaimID != 0 && req.ID == "":
		return Errorf(EInvalid, "a claim id fences a re-claim of one issue: give its id too")
	case req.Lease != 0 && req.DryRun:
		return Errorf(EInvalid, "--lease on a dry run: a dry run claims nothing, so it takes no lease")
	case req.MaxHeld < 0:
		return Errorf(EInvalid, "max held %d is negative", req.MaxHeld)
	}
	if err := checkDuration(req.Wait, req.Wait.String(), MaxWait, 0); err != nil {
		return Errorf(EInvalid, "--wait: %v", err)
	}
	return nil
}

// ReleaseRequest gives an issue back.
type ReleaseRequest struct {
	Agent   string
	ID      string
	ClaimID int64  // when not 0, release only while Agent holds the issue under this claim
	Reason  string // recorded in the event and, when given, as a bd comment
	Failed  bool   // the attempt failed: it counts towards backoff and abandonment
}

// Validate checks the request.
func (req ReleaseRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), validateReason(req.Reason), checkClaimID(req.ClaimID))
}

// CloseRequest closes an issue its agent holds: the end of a claim whose
// work is done.
type CloseRequest struct {
	Agent   string
	ID      string
	ClaimID int64  // when not 0, close only while Agent holds the issue under this claim
	Reason  string // the close reason ("" = bd's default, "Closed")
	DryRun  bool   // check that the close would succeed, change nothing
}

// Validate checks the request.
func (req CloseRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), validateReason(req.Reason), checkClaimID(req.ClaimID))
}

// HeartbeatRequest renews the lease of a held issue.
type HeartbeatRequest struct {
	Agent   string
	ID      string
	ClaimID int64         // when not 0, renew only while Agent holds the issue under this claim
	Lease   time.Duration // the new lease from now; 0 = the claim's current lease length
}

// Validate checks the request.
func (req HeartbeatRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), checkClaimID(req.ClaimID), checkLease(req.Lease))
}

// ResetRequest clears an issue's failure history; Actor is recorded as the
// events' actor.
type ResetRequest struct {
	Actor string
	ID    string
}

// Validate checks the request.
func (req ResetRequest) Validate() error {
	return firstError(ValidateAgent(req.Actor), validateIssueID(req.ID))
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// MaxAgentLen is the longest agent name accepted, in characters.
const MaxAgentLen = 64

// giveAgent says how to give an agent name, in the messages that refuse
// one.
const giveAgent = "pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)"

// ValidateAgent checks an agent name: non-empty, not blank, without
// leading or trailing whitespace, valid UTF-8, at most MaxAgentLen
// characters, no control characters. The name is written into
// issues.assignee and events.actor as given, so " backend-1" would be
// another agent than "backend-1".
func ValidateAgent(name string) error {
	switch {
	case name == "":
		return Errorf(EInvalid, "agent name is empty: %s", giveAgent)
	case !utf8.ValidString(name):
		return Errorf(EInvalid, "agent name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxAgentLen:
		return Errorf(EInvalid, "agent name is %d characters long; the limit is %d", utf8.RuneCountInString(name), MaxAgentLen)
	case strings.TrimSpace(name) == "":
		return Errorf(EInvalid, "agent name %q is blank: %s", name, giveAgent)
	case strings.TrimSpace(name) != name:
		return Errorf(EInvalid, "agent name %q has leading or trailing whitespace, which would become part of the name (another agent than %q): %s, without the whitespace",
			name, strings.TrimSpace(name), giveAgent)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return Errorf(EInvalid, "agent name contains the control character %U", r)
		}
	}
	return nil
}

// MaxReasonLen is the longest release or close reason accepted, in characters.
const MaxReasonLen = 2000

func validateIssueID(id string) error {
	if strings.TrimSpace(id) == "" {
		return Errorf(EInvalid, "no issue id: --id ISSUE is required")
	}
	return checkLength("the issue id", id)
}

func validateReason(reason string) error {
	switch {
	case !utf8.ValidString(reason):
		return Errorf(EInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return Errorf(EInvalid, "the reason is %d characters long; the limit is %d", utf8.RuneCountInString(reason), MaxReasonLen)
	case strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }):
		return Errorf(EInvalid, "the reason contains a control character")
	}
	return nil
}

func checkClaimID(id int64) error {
	if id < 0 {
		return Errorf(EInvalid, "claim id %d is not a claim id (a positive number)", id)
	}
	return nil
}

// checkLease is the lease setting's rule (see settings) for a lease given
// as a duration.
func checkLease(d time.Duration) error {
	if err := checkDuration(d, d.String(), MaxLease, time.Second); err != nil {
		return Errorf(EInvalid, "--lease: %v", err)
	}
	return nil
}
