package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Policy is the workspace-wide failure policy: how long an issue waits
// after a failed attempt, and when it is abandoned. Every agent of a
// workspace should run with the same policy (put it in .beads/config.yaml).
//
// The policy is evaluated by the database only, from the SQL built in this
// file, by every engine: claim-next's decision, an --id refusal, a
// release's retry_at and stats' backoff list all come from the same
// expressions, so they agree.
type Policy struct {
	BackoffInitial    time.Duration // wait after the first failed attempt; 0 turns backoff off
	BackoffMultiplier float64       // growth per further failure
	BackoffMax        time.Duration // cap of the wait
	MaxFailures       int           // failed attempts before the issue is abandoned; 0 = never
	AbandonedLabel    string        // the label an abandoned issue gets
}

// DefaultPolicy is seed 004's policy: 1m, doubling, at most 1h, abandoned
// after 5 failures, labelled claim:abandoned.
var DefaultPolicy = Policy{
	BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour,
	MaxFailures: 5, AbandonedLabel: "claim:abandoned",
}

// retryAt is the one backoff formula: when the backoff after n failed
// attempts (since the last reset), the latest at last, ends, in unix
// seconds: initial × multiplier^(n-1), capped at BackoffMax. It is SQL
// with its arguments.
func (p Policy) retryAt(h History, n, last string) (string, []any) {
	return "(" + fmt.Sprintf(h.UnixTime, last) + " + " + h.Least + "(?, ? * pow(?, " + n + " - 1)))",
		[]any{p.BackoffMax.Seconds(), p.BackoffInitial.Seconds(), p.BackoffMultiplier}
}

// exhausted is true when n failed attempts abandon an issue (SQL with its
// arguments).
func (p Policy) exhausted(n string) (string, []any) {
	if p.MaxFailures <= 0 {
		return "0", nil
	}
	return "(" + n + " >= ?)", []any{p.MaxFailures}
}

// labelled is true when issue i carries the abandoned label.
const labelled = "EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label = ?)"

// Rules are the policy's exclusions: an issue waits out its backoff after
// a failed attempt, and an abandoned one (max-failures reached, or carrying
// the abandoned label) waits for a reset. Both are checked last by
// claim-next (see Spec.Split).
func (p Policy) Rules(h History, now time.Time) []Rule {
	var rules []Rule
	if p.BackoffInitial > 0 {
		retry, args := p.retryAt(h, "n", "last")
		rules = append(rules, Rule{"backoff", "it is in backoff after a failed attempt", sq.Expr(
			"(NOT EXISTS ("+h.AnyFailure+") OR NOT EXISTS (SELECT 1 FROM ("+h.Failures+") f WHERE n > 0 AND "+retry+" > ?))",
			append(args, unixSeconds(now))...)})
	}
	abandoned := sq.Expr("NOT "+labelled, p.AbandonedLabel)
	reason := "it is abandoned: it has the label " + p.AbandonedLabel + " (bd-claim reset clears it)"
	if p.MaxFailures > 0 {
		exhausted, args := p.exhausted("n")
		abandoned = sq.Expr("(NOT "+labelled+" AND (NOT EXISTS ("+h.AnyFailure+") OR NOT (SELECT "+exhausted+" FROM ("+h.Failures+") f)))",
			append([]any{p.AbandonedLabel}, args...)...)
		reason = "it is abandoned: it has the label " + p.AbandonedLabel + " or " + strconv.Itoa(p.MaxFailures) + " failed attempts (bd-claim reset clears them)"
	}
	return append(rules, Rule{"abandoned", reason, abandoned})
}

// Clear is true for an issue without a failed attempt and without the
// abandoned label: every rule of the policy holds for it, and it is two
// lookups where the rules are more (the common issue, which the Dolt
// server plans faster this way).
func (p Policy) Clear(h History) sq.Sqlizer {
	return sq.Expr("(NOT "+labelled+" AND NOT EXISTS ("+h.AnyFailure+"))", p.AbandonedLabel)
}

// FailureHistory is an issue's failures since its last reset, as the
// policy judges it.
type FailureHistory struct {
	Failures      int
	LastFailureAt time.Time // zero without failures
	RetryAt       time.Time // when the backoff after the latest failure ends
	InBackoff     bool      // RetryAt is still to come
	Exhausted     bool      // the failures abandon the issue (max-failures)
	Labelled      bool      // the issue carries the abandoned label
}

// Attempts selects id, failures, last failure, retry_at (unix seconds),
// in backoff (at now), exhausted and labelled for the issues i that where
// selects.
func (p Policy) Attempts(h History, where sq.Sqlizer, now time.Time) sq.SelectBuilder {
	inner := sq.Select("i.id").
		Column("(SELECT n FROM (" + h.Failures + ") f) AS n").
		Column("COALESCE((SELECT last FROM (" + h.Failures + ") f), '') AS last").
		Column(sq.Expr(labelled+" AS labelled", p.AbandonedLabel)).
		From("issues i").Where(where)
	retry, args := p.retryAt(h, "n", "NULLIF(last, '')")
	exhausted, eargs := p.exhausted("n")
	return sq.Select("id", "n", "last").
		Column(sq.Expr("COALESCE("+retry+", 0)", args...)).
		Column(sq.Expr("COALESCE("+retry+" > ?, 0)", append(args, unixSeconds(now))...)).
		Column(sq.Expr(exhausted, eargs...)).
		Column("labelled").
		FromSelect(inner, "a")
}

// AttemptsRow scans one row of Attempts.
type AttemptsRow struct {
	ID    string
	last  string
	retry float64
	FailureHistory
}

func (a *AttemptsRow) Dest() []any {
	return []any{&a.ID, &a.Failures, &a.last, &a.retry, &a.InBackoff, &a.Exhausted, &a.Labelled}
}

// Done is the row's failures, its times read in the engine's layout of
// an event's time.
func (a *AttemptsRow) Done(eventTime string) FailureHistory {
	a.LastFailureAt, _ = time.Parse(eventTime, a.last) // '' without failures
	if a.Failures > 0 {
		a.RetryAt = fromUnixSeconds(a.retry)
	}
	return a.FailureHistory
}

// unixSeconds is t as SQL compares it with retryAt.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// fromUnixSeconds reads retryAt's unix seconds back as a UTC time.
func fromUnixSeconds(s float64) time.Time {
	sec := math.Floor(s)
	return time.Unix(int64(sec), int64(math.Round((s-sec)*1e9))).UTC()
}
