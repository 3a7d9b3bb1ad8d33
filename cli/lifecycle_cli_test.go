package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/cli"
)

// lc runs bd-claim with --quiet and decodes its JSON.
func lc(t *testing.T, dir string, env []string, args ...string) (result, *icmd.Result) {
	t.Helper()
	r := run(t, dir, env, append(args, "--quiet")...)
	var out result
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), "bd-claim %q: exit %d, stdout %q, stderr %q", args, r.ExitCode, r.Stdout(), r.Stderr())
	return out, r
}

// lcOK runs bd-claim and requires exit 0.
func lcOK(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	out, r := lc(t, dir, env, args...)
	assert.Equal(t, r.ExitCode, 0, "bd-claim %q: stdout %q", args, r.Stdout())
	assert.Equal(t, out.Status, "ok")
	return out
}

// countEvents counts the events rows of a workspace.
func countEvents(t *testing.T, root string) int {
	t.Helper()
	return claimtest.Count(t, claimtest.Open(t, claimtest.DBPath(root)), "SELECT count(*) FROM events")
}

func eventComment(t *testing.T, root string, id int64) string {
	t.Helper()
	var c string
	assert.NilError(t, claimtest.Open(t, claimtest.DBPath(root)).QueryRow("SELECT COALESCE(comment, '') FROM events WHERE id = ?", id).Scan(&c))
	return c
}

// assertLease checks that a lease of d was taken between before and after:
// its end is rounded up to a whole second.
func assertLease(t *testing.T, until *time.Time, before, after time.Time, d time.Duration) {
	t.Helper()
	assert.Assert(t, until != nil, "no lease_expires_at")
	lo, hi := before.Add(d).Truncate(time.Second), after.Add(d+time.Second)
	assert.Assert(t, !until.Before(lo) && !until.After(hi), "lease until %s, want %s..%s (%s)", until, lo, hi, d)
}

func appendConfig(t *testing.T, root, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, ".beads", "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	assert.NilError(t, err)
	_, err = f.WriteString("\n" + text)
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
}

// Every bad input of the lifecycle commands gets its exit status, error
// code and message, and changes nothing: the database keeps its bytes and
// no file appears.
func TestLifecycleBadInput(t *testing.T) {
	c := claimtest.Cases(t, "0.49.6")
	a01, open, bobs := c["A01"].ID, c["A02"].ID, c["S_INPROG"].ID
	type setup struct {
		env           []string
		args          []string
		holderClaimID int64 // expected error.holder_claim_id (0: absent)
	}
	plain := func(args ...string) func(t *testing.T, root string) setup {
		return func(*testing.T, string) setup { return setup{args: args} }
	}
	// bobsClaim: the refusal names bob's claim, the claim event bd wrote.
	bobsClaim := func(args ...string) func(t *testing.T, root string) setup {
		return func(t *testing.T, root string) setup {
			var id int64
			assert.NilError(t, claimtest.Open(t, claimtest.DBPath(root)).QueryRow(
				"SELECT max(id) FROM events WHERE issue_id = ? AND event_type IN ('claimed', 'status_changed')", bobs).Scan(&id))
			assert.Assert(t, id > 0)
			return setup{args: args, holderClaimID: id}
		}
	}
	// reclaimed: agent a claims A01, releases it and claims it again; the
	// first claim's id is then stale.
	reclaimed := func(args func(stale int64) []string) func(t *testing.T, root string) setup {
		return func(t *testing.T, root string) setup {
			first := lcOK(t, root, nil, "--agent", "a", "--id", a01, "--lease", "1m").ClaimID
			lcOK(t, root, nil, "release", "--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(first))
			second := lcOK(t, root, nil, "--agent", "a", "--id", a01, "--lease", "1m").ClaimID
			assert.Assert(t, second > first)
			return setup{args: args(first), holderClaimID: second}
		}
	}
	for _, tc := range []struct {
		name   string
		exit   int
		code   claim.Code
		msg    string
		holder string
		setup  func(t *testing.T, root string) setup
	}{
		{"release unknown id", 7, claim.ENotFound, "no issue fx-none", "", plain("release", "--agent", "a", "--id", "fx-none")},
		{"heartbeat unknown id", 7, claim.ENotFound, "no issue fx-none", "", plain("heartbeat", "--agent", "a", "--id", "fx-none", "--lease", "1m")},
		{"reset unknown id", 7, claim.ENotFound, "no issue fx-none", "", plain("reset", "--id", "fx-none")},
		{"release held by bob", 7, claim.EAlready, "held by bob", "bob", bobsClaim("release", "--agent", "a", "--id", bobs)},
		{"heartbeat held by bob", 7, claim.EAlready, "held by bob", "bob", bobsClaim("heartbeat", "--agent", "a", "--id", bobs, "--lease", "1m")},
		{"heartbeat held by b under a lease", 7, claim.EAlready, "held by b under claim", "b", func(t *testing.T, root string) setup {
			id := lcOK(t, root, nil, "--agent", "b", "--id", a01, "--lease", "1m").ClaimID
			return setup{args: []string{"heartbeat", "--agent", "a", "--id", a01}, holderClaimID: id}
		}},
		{"release held by b under a lease", 7, claim.EAlready, "held by b under claim", "b", func(t *testing.T, root string) setup {
			id := lcOK(t, root, nil, "--agent", "b", "--id", a01, "--lease", "1m").ClaimID
			return setup{args: []string{"release", "--agent", "a", "--id", a01, "--failed"}, holderClaimID: id}
		}},
		{"release with a stale claim id", 7, claim.EAlready, "no longer holds issue", "a", reclaimed(func(stale int64) []string {
			return []string{"release", "--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(stale)}
		})},
		{"failed release with a stale claim id", 7, claim.EAlready, "no longer holds issue", "a", reclaimed(func(stale int64) []string {
			return []string{"release", "--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(stale), "--failed"}
		})},
		{"heartbeat with a stale claim id", 7, claim.EAlready, "no longer holds issue", "a", reclaimed(func(stale int64) []string {
			return []string{"heartbeat", "--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(stale), "--lease", "1h"}
		})},
		{"re-claim with a stale claim id", 7, claim.EAlready, "no longer holds issue", "a", reclaimed(func(stale int64) []string {
			return []string{"--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(stale), "--lease", "1h"}
		})},
		{"release of an open issue", 7, claim.ENotClaimable, "is open, not held by a", "", plain("release", "--agent", "a", "--id", open)},
		{"heartbeat of an open issue", 7, claim.ENotClaimable, "is open, not held by a", "", plain("heartbeat", "--agent", "a", "--id", open, "--lease", "1m")},
		{"claim id of a released claim", 7, claim.ENotClaimable, "no longer holds issue", "", func(t *testing.T, root string) setup {
			id := lcOK(t, root, nil, "--agent", "a", "--id", a01).ClaimID
			lcOK(t, root, nil, "release", "--agent", "a", "--id", a01)
			return setup{args: []string{"--agent", "a", "--id", a01, "--claim-id", fmt.Sprint(id)}}
		}},
		{"heartbeat of a claim without lease", 2, claim.EInvalid, "has no lease: give its length with --lease", "", func(t *testing.T, root string) setup {
			lcOK(t, root, nil, "--agent", "a", "--id", a01)
			return setup{args: []string{"heartbeat", "--agent", "a", "--id", a01}}
		}},
		{"negative lease", 2, claim.EInvalid, "--lease: -1s is negative", "", plain("--agent", "a", "--lease", "-1s")},
		{"absurd lease", 2, claim.EInvalid, "--lease: 1000h is longer than the limit", "", plain("--agent", "a", "--lease", "1000h")},
		{"lease under 1s", 2, claim.EInvalid, "--lease: 10ms is shorter than 1s", "", plain("--agent", "a", "--lease", "10ms")},
		{"heartbeat lease under 1s", 2, claim.EInvalid, "shorter than 1s", "", plain("heartbeat", "--agent", "a", "--id", a01, "--lease", "500ms")},
		{"heartbeat absurd lease", 2, claim.EInvalid, "longer than the limit", "", plain("heartbeat", "--agent", "a", "--id", a01, "--lease", "1000h")},
		{"negative wait", 2, claim.EInvalid, "--wait: -5s is negative", "", plain("--agent", "a", "--wait", "-5s")},
		{"absurd wait", 2, claim.EInvalid, "--wait: 48h is longer than the limit", "", plain("--agent", "a", "--wait", "48h")},
		{"wait not a duration", 2, claim.EInvalid, "--wait", "", plain("--agent", "a", "--wait", "soon")},
		{"backoff-initial not a duration", 2, claim.EInvalid, `--backoff-initial: "abc" is not a duration`, "", plain("--agent", "a", "--backoff-initial", "abc")},
		{"backoff-multiplier under 1", 2, claim.EInvalid, `--backoff-multiplier: "0.5" is not a number from 1 to 100`, "", plain("--agent", "a", "--backoff-multiplier", "0.5")},
		{"backoff-multiplier NaN", 2, claim.EInvalid, "--backoff-multiplier", "", plain("release", "--agent", "a", "--id", a01, "--backoff-multiplier", "NaN")},
		{"negative max-failures", 2, claim.EInvalid, `--max-failures: "-1"`, "", plain("--agent", "a", "--max-failures", "-1")},
		{"max-held not a number", 2, claim.EInvalid, `--max-held: "x"`, "", plain("--agent", "a", "--max-held", "x")},
		{"abandoned-label with a space", 2, claim.EInvalid, "--abandoned-label", "", plain("reset", "--id", a01, "--abandoned-label", "a b")},
		{"backoff-max under backoff-initial", 2, claim.EInvalid, "backoff-max (1m0s) is shorter than backoff-initial (10m0s)", "", plain("--agent", "a", "--backoff-initial", "10m", "--backoff-max", "1m")},
		{"lease on a dry run", 2, claim.EInvalid, "--lease on a dry run", "", plain("--agent", "a", "--dry-run", "--lease", "1m")},
		{"explain without dry run", 2, claim.EInvalid, "--explain needs --dry-run", "", plain("--agent", "a", "--explain")},
		{"claim id without id", 2, claim.EInvalid, "give its id too", "", plain("--agent", "a", "--claim-id", "5")},
		{"negative claim id", 2, claim.EInvalid, "claim id -3 is not a claim id", "", plain("release", "--agent", "a", "--id", a01, "--claim-id", "-3")},
		{"release without id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("release", "--agent", "a")},
		{"heartbeat without id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("heartbeat", "--agent", "a")},
		{"reset without id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("reset")},
		{"release with an empty id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("release", "--agent", "a", "--id", "")},
		{"heartbeat with an empty id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("heartbeat", "--agent", "a", "--id", "", "--lease", "1m")},
		{"reset with an empty id", 2, claim.EInvalid, "--id ISSUE is required", "", plain("reset", "--id=")},
		{"release without agent", 2, claim.EInvalid, "agent name is empty", "", plain("release", "--id", a01)},
		{"release reason with a control character", 2, claim.EInvalid, "control character", "", func(t *testing.T, root string) setup {
			lcOK(t, root, nil, "--agent", "a", "--id", a01)
			return setup{args: []string{"release", "--agent", "a", "--id", a01, "--reason", "bad\x07bell"}}
		}},
		{"release reason too long", 2, claim.EInvalid, "the limit is 2000", "", func(t *testing.T, root string) setup {
			lcOK(t, root, nil, "--agent", "a", "--id", a01)
			return setup{args: []string{"release", "--agent", "a", "--id", a01, "--reason", strings.Repeat("x", 2001)}}
		}},
		{"lease flag on release", 2, claim.EInvalid, "unknown flag: --lease", "", plain("release", "--agent", "a", "--id", a01, "--lease", "1m")},
		{"stray argument to reap", 2, claim.EInvalid, `unexpected argument "now"`, "", plain("reap", "now")},
		{"bad BD_CLAIM_LEASE", 2, claim.EInvalid, `BD_CLAIM_LEASE=abc: "abc" is not a duration`, "", func(*testing.T, string) setup {
			return setup{env: []string{"BD_CLAIM_LEASE=abc"}, args: []string{"--agent", "a"}}
		}},
		{"bad BD_CLAIM_MAX_HELD on stats", 2, claim.EInvalid, "BD_CLAIM_MAX_HELD=-2", "", func(*testing.T, string) setup {
			return setup{env: []string{"BD_CLAIM_MAX_HELD=-2"}, args: []string{"stats"}}
		}},
		{"env backoff-max under backoff-initial", 2, claim.EInvalid, "backoff-max (1m0s) is shorter than backoff-initial (10m0s)", "", func(*testing.T, string) setup {
			return setup{env: []string{"BD_CLAIM_BACKOFF_INITIAL=10m", "BD_CLAIM_BACKOFF_MAX=1m"}, args: []string{"reap"}}
		}},
		{"bad nested config value", 2, claim.EInvalid, `config.yaml: claim.lease: "forever" is not a duration`, "", func(t *testing.T, root string) setup {
			appendConfig(t, root, "claim:\n  lease: forever\n")
			return setup{args: []string{"--agent", "a"}}
		}},
		{"bad flat config value", 2, claim.EInvalid, `config.yaml: claim.max-held: "lots"`, "", func(t *testing.T, root string) setup {
			appendConfig(t, root, "claim.max-held: lots\n")
			return setup{args: []string{"--agent", "a", "--dry-run"}}
		}},
		{"unknown config setting", 2, claim.EInvalid, `config.yaml: claim.leese: unknown setting "leese"`, "", func(t *testing.T, root string) setup {
			appendConfig(t, root, "claim:\n  leese: 1m\n")
			return setup{args: []string{"heartbeat", "--agent", "a", "--id", a01}}
		}},
		{"config claim not a mapping", 2, claim.EInvalid, "claim must be a mapping", "", func(t *testing.T, root string) setup {
			appendConfig(t, root, "claim: 5\n")
			return setup{args: []string{"stats"}}
		}},
		{"config backoff-max under backoff-initial", 2, claim.EInvalid, "backoff-max (1m0s) is shorter than backoff-initial (1h0m0s)", "", func(t *testing.T, root string) setup {
			appendConfig(t, root, "claim:\n  backoff-initial: 1h\n  backoff-max: 1m\n")
			return setup{args: []string{"release", "--agent", "a", "--id", a01, "--failed"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := claimtest.Fixture(t, "0.49.6")
			s := tc.setup(t, root)
			db := claimtest.DBPath(root)
			before, sum := listFiles(t, root), claimtest.FileSum(t, db)
			events := countEvents(t, root)
			out, r := lc(t, root, s.env, s.args...)
			r.Assert(t, icmd.Expected{ExitCode: tc.exit})
			assert.Equal(t, out.Status, "error")
			assert.Assert(t, out.Error != nil)
			assert.Equal(t, out.Error.Code, tc.code)
			assert.Assert(t, is.Contains(out.Error.Message, tc.msg))
			assert.Equal(t, out.Error.Holder, tc.holder)
			assert.Equal(t, out.Error.HolderClaimID, s.holderClaimID)
			assert.Assert(t, out.Issue == nil && out.ClaimID == 0 && out.Attempt == nil)
			assert.Equal(t, countEvents(t, root), events)
			assert.Equal(t, claimtest.FileSum(t, db), sum, "database changed")
			assert.DeepEqual(t, listFiles(t, root), before)
		})
	}
}

// A heartbeat renews the lease in the claim event itself: no event row is
// added and the issue row is untouched. Without --lease it renews by the
// claim's own lease length; an --id re-claim with --lease renews too.
func TestLifecycleHeartbeat(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	id := claimtest.Cases(t, "0.49.6")["A01"].ID
	t0 := time.Now()
	claimed := lcOK(t, root, nil, "--agent", "hb", "--id", id, "--lease", "10s")
	assertLease(t, claimed.LeaseExpiresAt, t0, time.Now(), 10*time.Second)
	assert.Assert(t, claimed.ClaimID > 0)
	events := countEvents(t, root)

	t1 := time.Now()
	beat := lcOK(t, root, nil, "heartbeat", "--agent", "hb", "--id", id, "--claim-id", fmt.Sprint(claimed.ClaimID), "--lease", "1h")
	assertLease(t, beat.LeaseExpiresAt, t1, time.Now(), time.Hour)
	assert.Assert(t, beat.LeaseExpiresAt.After(*claimed.LeaseExpiresAt))
	assert.Equal(t, beat.ClaimID, claimed.ClaimID)
	assert.Equal(t, countEvents(t, root), events, "a heartbeat adds no event")
	assert.Equal(t, eventComment(t, root, claimed.ClaimID), "bd-claim lease until "+beat.LeaseExpiresAt.UTC().Format(time.RFC3339)+" (1h0m0s)")
	// The issue row is untouched: same updated_at, same content hash.
	assert.Equal(t, beat.Issue.UpdatedAt, claimed.Issue.UpdatedAt)
	assert.Equal(t, beat.Issue.ContentHash, claimed.Issue.ContentHash)

	// No --lease: the claim's lease length, now 1h (not the first 10s).
	t2 := time.Now()
	again := lcOK(t, root, nil, "heartbeat", "--agent", "hb", "--id", id)
	assertLease(t, again.LeaseExpiresAt, t2, time.Now(), time.Hour)
	assert.Equal(t, again.ClaimID, claimed.ClaimID)

	// An --id re-claim by the holder is the same claim, its lease renewed.
	t3 := time.Now()
	re := lcOK(t, root, nil, "--agent", "hb", "--id", id, "--claim-id", fmt.Sprint(claimed.ClaimID), "--lease", "2h")
	assertLease(t, re.LeaseExpiresAt, t3, time.Now(), 2*time.Hour)
	assert.Equal(t, re.ClaimID, claimed.ClaimID)
	assert.Equal(t, countEvents(t, root), events, "a re-claim adds no event")

	// stats shows the renewed lease.
	var st claim.Stats
	r := run(t, root, nil, "stats", "--quiet")
	r.Assert(t, icmd.Success)
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &st))
	var found bool
	for _, a := range st.InProgress {
		for _, i := range a.Issues {
			if i.ID == id {
				found = true
				assert.Equal(t, a.Agent, "hb")
				assert.Equal(t, i.ClaimID, claimed.ClaimID)
				assert.Assert(t, i.LeaseUntil != nil && i.LeaseUntil.Equal(*re.LeaseExpiresAt), "%v", i.LeaseUntil)
				assert.Assert(t, !i.Expired)
			}
		}
	}
	assert.Assert(t, found, "stats does not list %s", id)
}

// release --failed counts failed attempts: a backoff after each, the
// abandoned label at max-failures, and reset clears both.
func TestLifecycleReleaseFailed(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	id := claimtest.Cases(t, "0.49.6")["A01"].ID
	lcOK(t, root, nil, "--agent", "f", "--id", id)
	t0 := time.Now()
	rel := lcOK(t, root, nil, "release", "--agent", "f", "--id", id, "--failed", "--reason", "tests broke")
	t1 := time.Now()
	assert.Assert(t, rel.Attempt != nil)
	assert.Equal(t, rel.Attempt.Failures, 1)
	assert.Assert(t, !rel.Attempt.Abandoned)
	// The default backoff after a first failure is 1m, from the failure
	// event's time (whole seconds).
	assert.Assert(t, rel.Attempt.RetryAt != nil)
	lo, hi := t0.Truncate(time.Second).Add(time.Minute), t1.Add(time.Minute)
	assert.Assert(t, !rel.Attempt.RetryAt.Before(lo) && !rel.Attempt.RetryAt.After(hi), "retry_at %s, want %s..%s", rel.Attempt.RetryAt, lo, hi)
	assert.Equal(t, rel.Issue.Status, "open")
	assert.Equal(t, rel.Issue.Assignee, "")
	assert.Equal(t, claimtest.Count(t, claimtest.Open(t, claimtest.DBPath(root)),
		"SELECT count(*) FROM comments WHERE issue_id = ? AND text LIKE '%attempt 1 by f failed: tests broke%'", id), 1)

	// In backoff: --id is refused with the time, claim-next skips it, stats lists it.
	out, r := lc(t, root, nil, "--agent", "g", "--id", id)
	r.Assert(t, icmd.Expected{ExitCode: 7})
	assert.Equal(t, out.Error.Code, claim.ENotClaimable)
	assert.Assert(t, is.Contains(out.Error.Message, "in backoff until "+rel.Attempt.RetryAt.UTC().Format(time.RFC3339)+" after 1 failed attempt"))
	dry, _ := lc(t, root, nil, "--agent", "g", "--dry-run", "--explain")
	assert.Equal(t, dry.Explain.Excluded["backoff"], 1)
	st := stats(t, root, nil)
	assert.Equal(t, st.Policy.BackoffInitial, "1m0s")
	assert.DeepEqual(t, st.Backoff, []claim.Backoff{{ID: id, Failures: 1, RetryAt: rel.Attempt.RetryAt.UTC()}})
	assert.Equal(t, st.LastHour.Failures, 1)

	// Without backoff, a second failure abandons it at max-failures 2.
	env := []string{"BD_CLAIM_BACKOFF_INITIAL=0", "BD_CLAIM_MAX_FAILURES=2"}
	lcOK(t, root, env, "--agent", "g", "--id", id)
	rel = lcOK(t, root, env, "release", "--agent", "g", "--id", id, "--failed")
	assert.Equal(t, rel.Attempt.Failures, 2)
	assert.Assert(t, rel.Attempt.Abandoned)
	assert.Assert(t, rel.Attempt.RetryAt == nil)
	assert.DeepEqual(t, labels(t, root, id), []string{"backend", "claim:abandoned"})
	// BUG: the issue printed is the one read before the label was added.
	assert.Check(t, slices.Contains(rel.Issue.Labels, "claim:abandoned"), "release --failed printed labels %v; the database has %v", rel.Issue.Labels, labels(t, root, id))
	out, r = lc(t, root, env, "--agent", "g", "--id", id)
	r.Assert(t, icmd.Expected{ExitCode: 7})
	assert.Assert(t, is.Contains(out.Error.Message, "abandoned"))
	st = stats(t, root, env)
	assert.DeepEqual(t, st.Abandoned, []claim.Abandoned{{ID: id, Failures: 2, Labelled: true}})
	// Even with the default policy (max-failures 5) the label keeps it out.
	_, r = lc(t, root, nil, "--agent", "g", "--id", id)
	r.Assert(t, icmd.Expected{ExitCode: 7})

	// reset clears the failures and the label.
	res := lcOK(t, root, nil, "reset", "--id", id)
	assert.Equal(t, res.Agent, "bd-claim")
	assert.Equal(t, res.Reset.Cleared, 2)
	assert.Assert(t, res.Reset.LabelRemoved)
	assert.DeepEqual(t, labels(t, root, id), []string{"backend"})
	// BUG: the issue printed is the one read before the label was removed.
	assert.Check(t, !slices.Contains(res.Issue.Labels, "claim:abandoned"), "reset printed labels %v; the database has %v", res.Issue.Labels, labels(t, root, id))
	again := lcOK(t, root, nil, "--agent", "g", "--id", id)
	assert.Equal(t, again.Issue.ID, id)
	// A failure after the reset is attempt 1 again.
	rel = lcOK(t, root, nil, "release", "--agent", "g", "--id", id, "--failed")
	assert.Equal(t, rel.Attempt.Failures, 1)

	// reset of an issue with no failures changes nothing.
	other := claimtest.Cases(t, "0.49.6")["A02"].ID
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	res = lcOK(t, root, nil, "reset", "--id", other, "--agent", "ops")
	assert.Equal(t, res.Agent, "ops")
	assert.Equal(t, res.Reset.Cleared, 0)
	assert.Assert(t, !res.Reset.LabelRemoved)
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
}

func labels(t *testing.T, root, id string) []string {
	t.Helper()
	return claimtest.Strings(t, claimtest.Open(t, claimtest.DBPath(root)), "SELECT label FROM labels WHERE issue_id = ? ORDER BY label", id)
}

func stats(t *testing.T, root string, env []string, args ...string) claim.Stats {
	t.Helper()
	r := run(t, root, env, append([]string{"stats", "--quiet"}, args...)...)
	r.Assert(t, icmd.Success)
	var st claim.Stats
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &st))
	return st
}

// --max-held limits claim-next (exit 3 with a reason) and --id claims of
// an issue the agent does not hold (exit 7 NOT_CLAIMABLE, dry run
// included); a re-claim of an issue it holds still succeeds.
func TestLifecycleMaxHeld(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	first := lcOK(t, root, nil, "--agent", "m", "--max-held", "1")
	out, r := lc(t, root, nil, "--agent", "m", "--max-held", "1")
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Equal(t, out.Status, "ok")
	assert.Assert(t, out.Issue == nil)
	assert.Equal(t, out.Reason, "agent m already holds 1 in_progress issue (max held 1)")
	out, r = lc(t, root, nil, "--agent", "m", "--max-held", "1", "--dry-run", "--explain")
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Equal(t, out.Explain.Held, 1)
	assert.Equal(t, out.Explain.MaxHeld, 1)
	assert.Equal(t, out.Explain.Claimable, 0)
	assert.Assert(t, out.Explain.Excluded["capacity"] > 0)
	// Another agent is not limited by m's claims.
	lcOK(t, root, nil, "--agent", "n", "--max-held", "1")
	// Releasing frees the capacity.
	lcOK(t, root, nil, "release", "--agent", "m", "--id", first.Issue.ID)
	held := lcOK(t, root, nil, "--agent", "m", "--max-held", "1")
	// At capacity, --id of another issue is refused and changes nothing;
	// the issue it holds can be claimed again.
	other := claimtest.Cases(t, "0.49.6")["A15"].ID
	before := claimtest.Snapshot(t, claimtest.DBPath(root))
	for _, dry := range [][]string{nil, {"--dry-run"}} {
		out, r = lc(t, root, nil, append([]string{"--agent", "m", "--max-held", "1", "--id", other}, dry...)...)
		r.Assert(t, icmd.Expected{ExitCode: 7})
		assert.Equal(t, out.Error.Code, claim.ENotClaimable)
		assert.ErrorContains(t, errors.New(out.Error.Message), "(capacity): agent m already holds 1 in_progress issue")
	}
	assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, claimtest.DBPath(root))), map[string][2][]string{})
	again := lcOK(t, root, nil, "--agent", "m", "--max-held", "1", "--id", held.Issue.ID)
	assert.Equal(t, again.ClaimID, held.ClaimID)
	// Without the limit, --id claims it.
	lcOK(t, root, nil, "--agent", "m", "--id", other)
}

// --resume: an agent that holds nothing claims as usual (no "resumed");
// once it holds an issue it gets that one back, "resumed": true, under the
// same claim, its lease renewed from now (--lease, else the lease's own
// length), and nothing new is claimed, at capacity too; a dry run says so
// in a line for a person, and writes nothing; with --id it is refused,
// exit 2, and nothing changes.
func TestLifecycleResume(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	first := lcOK(t, root, nil, "--agent", "r", "--resume", "--lease", "1m")
	assert.Assert(t, first.Issue != nil && !first.Resumed && first.ClaimID > 0, "%+v", first)
	events := countEvents(t, root)
	before := time.Now()
	again := lcOK(t, root, nil, "--agent", "r", "--resume", "--max-held", "1", "--lease", "10m")
	assert.Assert(t, again.Resumed && again.Issue.ID == first.Issue.ID && again.ClaimID == first.ClaimID, "%+v", again)
	assertLease(t, again.LeaseExpiresAt, before, time.Now(), 10*time.Minute)
	assert.Equal(t, countEvents(t, root), events, "nothing new is claimed")
	assert.Equal(t, eventComment(t, root, first.ClaimID), (&claim.Lease{Until: *again.LeaseExpiresAt, Duration: 10 * time.Minute}).Comment())

	snap := claimtest.Snapshot(t, claimtest.DBPath(root))
	r := run(t, root, nil, "--agent", "r", "--resume", "--dry-run", "--human")
	r.Assert(t, icmd.Expected{ExitCode: 0})
	assert.Assert(t, strings.HasPrefix(r.Stdout(), "would resume "+first.Issue.ID+" for r: "), r.Stdout())
	assert.Assert(t, strings.Contains(r.Stdout(), fmt.Sprintf(", claim %d, leased until ", first.ClaimID)), r.Stdout())
	assert.DeepEqual(t, claimtest.Diff(snap, claimtest.Snapshot(t, claimtest.DBPath(root))), map[string][2][]string{})
	r = run(t, root, nil, "--agent", "r", "--resume", "--human")
	r.Assert(t, icmd.Expected{ExitCode: 0})
	assert.Assert(t, strings.HasPrefix(r.Stdout(), "resumed "+first.Issue.ID+" for r: "), r.Stdout())
	r = run(t, root, nil, "--agent", "r", "--resume")
	var logged map[string]any
	assert.NilError(t, json.Unmarshal([]byte(strings.Split(strings.TrimSpace(r.Stderr()), "\n")[0]), &logged), r.Stderr())
	assert.Assert(t, logged["msg"] == "issue_claim_success" && logged["resumed"] == true, "%v", logged)

	snap = claimtest.Snapshot(t, claimtest.DBPath(root))
	out, res := lc(t, root, nil, "--agent", "r", "--resume", "--id", first.Issue.ID)
	res.Assert(t, icmd.Expected{ExitCode: 2})
	assert.Equal(t, out.Error.Code, claim.EInvalid)
	assert.ErrorContains(t, errors.New(out.Error.Message), "--resume with --id")
	assert.DeepEqual(t, claimtest.Diff(snap, claimtest.Snapshot(t, claimtest.DBPath(root))), map[string][2][]string{})
}

// --dry-run --explain counts, per rule, the open issues it excludes.
func TestLifecycleExplain(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	out, r := lc(t, root, nil, "--agent", "e", "--dry-run", "--explain", "--label", "no-such-label")
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Assert(t, out.DryRun && out.Issue == nil)
	e := out.Explain
	assert.Assert(t, e != nil && e.Open > 0)
	assert.Equal(t, e.Excluded["label:no-such-label"], e.Open)
	assert.Equal(t, e.Claimable, 0)
	assert.Equal(t, e.Held, 0)

	all, r := lc(t, root, nil, "--agent", "e", "--dry-run", "--explain")
	r.Assert(t, icmd.Success)
	assert.Equal(t, all.Explain.Open, e.Open)
	assert.Equal(t, all.Explain.Claimable, stats(t, root, nil).Ready, "a fresh agent may claim what stats calls ready")
	assert.Equal(t, all.Explain.Excluded["blocked"], e.Excluded["blocked"])
	_, present := all.Explain.Excluded["label:no-such-label"]
	assert.Assert(t, !present)

	h := run(t, root, nil, "--agent", "e", "--dry-run", "--explain", "--label", "no-such-label", "--human", "--quiet")
	h.Assert(t, icmd.Expected{ExitCode: 3, Out: "open issues excluded, by rule:"})
	assert.Assert(t, is.Regexp(`label:no-such-label\s+`+fmt.Sprint(e.Open)+`\n`, h.Stdout()))
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
}

// stats: the documented JSON keys and the human table, and leases that
// expire, are taken over and reaped.
func TestLifecycleStats(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	c := claimtest.Cases(t, "0.49.6")
	a, b := c["A01"].ID, c["A02"].ID
	base := stats(t, root, nil).LastHour // the fixture's own events, if it was built within the hour
	x1 := lcOK(t, root, nil, "--agent", "x1", "--id", a, "--lease", "1s")
	x2 := lcOK(t, root, nil, "--agent", "x2", "--id", b, "--lease", "1s")
	time.Sleep(time.Until(x2.LeaseExpiresAt.Add(50 * time.Millisecond)))

	r := run(t, root, nil, "stats", "--json", "--quiet")
	r.Assert(t, icmd.Success)
	var doc map[string]any
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &doc))
	keys := func(m any) []string {
		mm, ok := m.(map[string]any)
		assert.Assert(t, ok, "%v is not an object", m)
		var ks []string
		for k := range mm {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	assert.DeepEqual(t, keys(doc), []string{"abandoned", "backoff", "bd_ready", "blocked", "expired_leases", "generated_at", "in_progress",
		"last_hour", "open", "policy", "ready", "ready_by_priority", "ready_takeovers", "status"})
	assert.DeepEqual(t, keys(doc["ready_by_priority"]), []string{"P0", "P1", "P2", "P3", "P4"})
	assert.DeepEqual(t, keys(doc["last_hour"]), []string{"claims", "closes", "failures", "reclaims", "releases"})
	assert.DeepEqual(t, keys(doc["policy"]), []string{"abandoned_label", "backoff_initial", "backoff_max", "backoff_multiplier", "max_failures"})
	for _, k := range []string{"in_progress", "expired_leases", "backoff", "abandoned"} {
		_, ok := doc[k].([]any)
		assert.Assert(t, ok, "%s is %v, not an array", k, doc[k])
	}
	var st claim.Stats
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &st))
	sum := 0
	for _, n := range st.ReadyByPriority {
		sum += n
	}
	assert.Equal(t, sum, st.Ready)
	for _, e := range st.ExpiredLeases { // claimed within the second before the lease began
		assert.Assert(t, e.ClaimedAt != nil && !e.ClaimedAt.After(*e.LeaseUntil) && e.LeaseUntil.Sub(*e.ClaimedAt) <= 3*time.Second, "%+v", e)
	}
	assert.DeepEqual(t, st.ExpiredLeases, []claim.Expired{
		{ID: a, Holder: "x1", ClaimID: x1.ClaimID, LeaseUntil: new(x1.LeaseExpiresAt.UTC()), ClaimedAt: st.ExpiredLeases[0].ClaimedAt},
		{ID: b, Holder: "x2", ClaimID: x2.ClaimID, LeaseUntil: new(x2.LeaseExpiresAt.UTC()), ClaimedAt: st.ExpiredLeases[1].ClaimedAt},
	})
	assert.DeepEqual(t, st.LastHour, claim.EventCounts{Claims: base.Claims + 2, Releases: base.Releases, Failures: base.Failures, Reclaims: base.Reclaims, Closes: base.Closes})
	assert.Equal(t, st.Policy, claim.PolicyJSON{BackoffInitial: "1m0s", BackoffMultiplier: 2, BackoffMax: "1h0m0s", MaxFailures: 5, AbandonedLabel: "claim:abandoned"})

	h := run(t, root, nil, "stats", "--human", "--quiet")
	h.Assert(t, icmd.Success)
	for _, want := range []string{
		fmt.Sprintf("ready        %d", st.Ready), "in progress", "(", "2 expired leases)", "backoff", "abandoned",
		"last hour", fmt.Sprintf("%d claims, %s, %s, %s, %s", base.Claims+2, counted(base.Releases, "release"), counted(base.Closes, "close"), counted(base.Failures, "failure"), counted(base.Reclaims, "reclaim")),
		"AGENT", "ISSUE", "CLAIM", "LEASE",
		"EXPIRED " + x1.LeaseExpiresAt.UTC().Format(time.RFC3339),
	} {
		assert.Assert(t, is.Contains(h.Stdout(), want))
	}
	assert.Assert(t, is.Regexp(`(?m)^x1\s+`+a+`\s+`+fmt.Sprint(x1.ClaimID)+`\s`, h.Stdout()))
	assert.Assert(t, !strings.HasPrefix(h.Stdout(), "{"))

	// reap --dry-run lists both and writes nothing.
	dbSum := claimtest.FileSum(t, claimtest.DBPath(root))
	dry := lcOK(t, root, nil, "reap", "--dry-run")
	assert.Equal(t, len(dry.Reaped), 2)
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), dbSum)

	// A takeover of one by --id, then a reap of the other.
	took := lcOK(t, root, nil, "--agent", "taker", "--id", a, "--lease", "1m")
	assert.Assert(t, took.TookOver != nil)
	assert.Equal(t, took.TookOver.Agent, "x1")
	assert.Equal(t, took.TookOver.ClaimID, x1.ClaimID)
	assert.Assert(t, took.TookOver.LeaseUntil != nil && took.TookOver.LeaseUntil.Equal(*x1.LeaseExpiresAt))
	assert.Assert(t, took.ClaimID > x2.ClaimID)
	reaped := lcOK(t, root, nil, "reap", "--agent", "reaper")
	assert.Assert(t, len(reaped.Reaped) == 1 && reaped.Reaped[0].ClaimedAt != nil, "%+v", reaped.Reaped)
	assert.DeepEqual(t, reaped.Reaped, []claim.Expired{{ID: b, Holder: "x2", ClaimID: x2.ClaimID, LeaseUntil: new(x2.LeaseExpiresAt.UTC()), ClaimedAt: reaped.Reaped[0].ClaimedAt}})
	assert.Equal(t, len(lcOK(t, root, nil, "reap").Reaped), 0)

	// The old holders are told.
	out, rr := lc(t, root, nil, "heartbeat", "--agent", "x1", "--id", a, "--claim-id", fmt.Sprint(x1.ClaimID))
	rr.Assert(t, icmd.Expected{ExitCode: 7})
	assert.Equal(t, out.Error.Code, claim.EAlready)
	assert.Equal(t, out.Error.Holder, "taker")
	out, rr = lc(t, root, nil, "release", "--agent", "x2", "--id", b, "--claim-id", fmt.Sprint(x2.ClaimID))
	rr.Assert(t, icmd.Expected{ExitCode: 7})
	assert.Equal(t, out.Error.Code, claim.ENotClaimable)

	st = stats(t, root, nil, "--backoff-initial", "2m", "--max-failures", "7")
	assert.Equal(t, len(st.ExpiredLeases), 0)
	assert.DeepEqual(t, st.LastHour, claim.EventCounts{Claims: base.Claims + 3, Releases: base.Releases, Failures: base.Failures, Reclaims: base.Reclaims + 2, Closes: base.Closes})
	assert.Equal(t, st.Policy.BackoffInitial, "2m0s")
	assert.Equal(t, st.Policy.MaxFailures, 7)
	var held []string
	for _, ac := range st.InProgress {
		for _, i := range ac.Issues {
			if ac.Agent == "taker" || ac.Agent == "x1" || ac.Agent == "x2" {
				held = append(held, ac.Agent+" "+i.ID)
			}
		}
	}
	assert.DeepEqual(t, held, []string{"taker " + a})
}

// Settings: a flag beats the environment, which beats .beads/config.yaml,
// which beats the default.
func TestLifecycleSettingsPrecedence(t *testing.T) {
	claimNext := func(t *testing.T, root string, env []string, lease time.Duration, args ...string) {
		t.Helper()
		t0 := time.Now()
		out := lcOK(t, root, env, append([]string{"--agent", "p"}, args...)...)
		assertLease(t, out.LeaseExpiresAt, t0, time.Now(), lease)
	}
	full := func(t *testing.T, root string, env []string, limit int, args ...string) {
		t.Helper()
		out, r := lc(t, root, env, append([]string{"--agent", "p"}, args...)...)
		r.Assert(t, icmd.Expected{ExitCode: 3})
		assert.Assert(t, is.Contains(out.Reason, fmt.Sprintf("(max held %d)", limit)))
	}
	for _, cfg := range []string{"claim:\n  max-held: 1\n  lease: 1m\n", "claim.max-held: 1\nclaim.lease: 1m\n"} {
		t.Run(strings.SplitN(cfg, ":", 2)[0], func(t *testing.T) {
			root := claimtest.Fixture(t, "0.49.6")
			appendConfig(t, root, cfg)
			claimNext(t, root, nil, time.Minute)
			full(t, root, nil, 1)
			env := []string{"BD_CLAIM_MAX_HELD=2", "BD_CLAIM_LEASE=2m"}
			claimNext(t, root, env, 2*time.Minute)
			full(t, root, env, 2)
			claimNext(t, root, env, 3*time.Minute, "--max-held", "3", "--lease", "3m")
			full(t, root, env, 3, "--max-held", "3")
			// A flag set to 0 still wins: no limit, no lease.
			out := lcOK(t, root, env, "--agent", "p", "--max-held", "0", "--lease", "0")
			assert.Assert(t, out.LeaseExpiresAt == nil)
			assert.Equal(t, out.Issue.Assignee, "p")
			full(t, root, env, 2)
		})
	}
}

// raceOp is one bd-claim run of TestLifecycleRace.
type raceOp struct {
	kind    string // claim, heartbeat, release, failed, reclaim, reap
	agent   string
	issue   string
	claimID int64 // the one given, for heartbeat, release, failed, reclaim
	exit    int
	out     result
	raw     string
	err     error
}

// 16 OS processes claim with 5s leases, heartbeat, release (some failed),
// re-claim, forget claims (which then expire and are taken over or reaped)
// and reap, for about 3s on one workspace. The events then tell one
// consistent story that matches every process's output. (With 1s leases,
// the writers' queue serving 16 processes in turn made a -race process's
// next write come after its lease on a loaded machine, every time.)
func TestLifecycleRace(t *testing.T) {
	dir := t.TempDir()
	_, err := sqlite.CreateDemo(context.Background(), dir, 16, 7)
	assert.NilError(t, err)
	env := []string{"BD_CLAIM_BACKOFF_INITIAL=0", "BD_CLAIM_MAX_FAILURES=3"}
	// The race runs for 3s, and on until it has exercised every kind of
	// operation (a loaded machine runs few processes a second), for at
	// most a minute.
	start := time.Now()
	var mu sync.Mutex
	var ops []raceOp
	succeeded := map[string]int{} // kind → exit-0 runs; "expired" counts takeovers and reaped leases
	more := func() bool {
		mu.Lock()
		defer mu.Unlock()
		covered := succeeded["claim"] >= 10 && succeeded["expired"] > 0
		for _, k := range []string{"heartbeat", "release", "failed", "reclaim"} {
			covered = covered && succeeded[k] > 0
		}
		return time.Since(start) < 3*time.Second || !covered && time.Since(start) < time.Minute
	}
	exec := func(kind, agent, issue string, claimID int64, args ...string) raceOp {
		r := run(t, dir, env, append(args, "--quiet", "--timeout-ms", "20000")...)
		op := raceOp{kind: kind, agent: agent, issue: issue, claimID: claimID, exit: r.ExitCode, raw: r.Stdout() + r.Stderr()}
		op.err = json.Unmarshal([]byte(r.Stdout()), &op.out)
		mu.Lock()
		ops = append(ops, op)
		if op.exit == 0 {
			succeeded[kind]++
			if op.out.TookOver != nil || len(op.out.Reaped) > 0 {
				succeeded["expired"]++
			}
		}
		mu.Unlock()
		return op
	}
	var wg sync.WaitGroup
	for p := range 16 {
		wg.Go(func() {
			if p == 0 { // one reaper, slow enough to leave expired leases to takeovers
				for time.Sleep(time.Second); more(); time.Sleep(time.Second) {
					exec("reap", "reaper", "", 0, "reap", "--agent", "reaper")
				}
				return
			}
			// Two processes share each agent name, so that an agent's
			// expired claim may be taken over by itself.
			agent := fmt.Sprintf("racer-%d", p%7)
			rnd := rand.New(rand.NewPCG(uint64(p), 99))
			type claimRef struct {
				id  string
				cid int64
			}
			var held []claimRef
			// Each worker goes round these, from its own starting point.
			actions := []string{"heartbeat", "release", "reclaim", "heartbeat", "failed", "forget"}
			next := p
			for step := p; more(); step++ {
				if len(held) == 0 || step%3 == 0 {
					op := exec("claim", agent, "", 0, "--agent", agent, "--lease", "5s")
					if op.exit == 0 && op.out.Issue != nil {
						held = append(held, claimRef{op.out.Issue.ID, op.out.ClaimID})
					} else {
						time.Sleep(time.Duration(50+rnd.IntN(100)) * time.Millisecond) // nothing to claim: let others run
					}
					continue
				}
				i := rnd.IntN(len(held))
				h := held[i]
				drop := func() { held = slices.Delete(held, i, i+1) }
				cid := fmt.Sprint(h.cid)
				next++
				switch actions[next%len(actions)] {
				case "heartbeat":
					if exec("heartbeat", agent, h.id, h.cid, "heartbeat", "--agent", agent, "--id", h.id, "--claim-id", cid).exit != 0 {
						drop()
					}
				case "release":
					exec("release", agent, h.id, h.cid, "release", "--agent", agent, "--id", h.id, "--claim-id", cid, "--reason", "done")
					drop()
				case "failed":
					exec("failed", agent, h.id, h.cid, "release", "--agent", agent, "--id", h.id, "--claim-id", cid, "--failed")
					drop()
				case "reclaim":
					if exec("reclaim", agent, h.id, h.cid, "--agent", agent, "--id", h.id, "--claim-id", cid, "--lease", "5s").exit != 0 {
						drop()
					}
				default: // forget it: its lease expires, to be taken over or reaped
					drop()
				}
			}
		})
	}
	wg.Wait()

	// Every process: a known exit status and JSON that goes with it.
	kinds := map[string]map[int]int{}
	claims := map[int64]raceOp{} // claim_id → the claim-next that printed it
	var takeovers, reapedN int
	for _, op := range ops {
		assert.NilError(t, op.err, "%s by %s: %s", op.kind, op.agent, op.raw)
		if kinds[op.kind] == nil {
			kinds[op.kind] = map[int]int{}
		}
		kinds[op.kind][op.exit]++
		switch op.exit {
		case 0:
			assert.Equal(t, op.out.Status, "ok")
		case 3:
			assert.Equal(t, op.kind, "claim", "%s: %s", op.kind, op.raw)
			assert.Assert(t, op.out.Issue == nil)
		case 7:
			assert.Assert(t, op.kind != "claim" && op.kind != "reap", "%s: %s", op.kind, op.raw)
			assert.Assert(t, op.out.Error.Code == claim.EAlready || op.out.Error.Code == claim.ENotClaimable, op.raw)
			continue
		default:
			t.Errorf("%s by %s exited %d: %s", op.kind, op.agent, op.exit, op.raw)
			continue
		}
		switch op.kind {
		case "claim":
			if op.exit != 0 {
				continue
			}
			prev, dup := claims[op.out.ClaimID]
			assert.Assert(t, !dup, "claim_id %d printed twice: %s and %s", op.out.ClaimID, prev.raw, op.raw)
			assert.Assert(t, op.out.ClaimID > 0 && op.out.LeaseExpiresAt != nil)
			assert.Equal(t, op.out.Issue.Assignee, op.agent)
			claims[op.out.ClaimID] = op
			if op.out.TookOver != nil {
				takeovers++
			}
		case "heartbeat", "release", "failed", "reclaim":
			assert.Equal(t, op.out.ClaimID, op.claimID, "%s answered for another claim: %s", op.kind, op.raw)
			assert.Equal(t, op.out.Issue.ID, op.issue)
		case "reap":
			reapedN += len(op.out.Reaped)
		}
	}
	t.Logf("runs by kind and exit status: %v; %d claims, %d takeovers, %d reaped", kinds, len(claims), takeovers, reapedN)
	// The run exercised what it means to.
	assert.Assert(t, len(claims) >= 10, "%v", kinds)
	assert.Assert(t, kinds["heartbeat"][0] > 0 && kinds["release"][0] > 0 && kinds["failed"][0] > 0 && kinds["reclaim"][0] > 0, "%v", kinds)
	assert.Assert(t, takeovers+reapedN > 0, "no lease ever expired")

	conn := claimtest.Open(t, claimtest.DBPath(dir))
	var check string
	assert.NilError(t, conn.QueryRow("PRAGMA integrity_check").Scan(&check))
	assert.Equal(t, check, "ok")

	// The claim history of every issue, event by event.
	type event struct {
		id                                 int64
		issue, typ, actor, comment, status string
		assignee                           string
	}
	rows, err := conn.Query(`SELECT id, issue_id, event_type, actor, COALESCE(comment, ''), COALESCE(new_value, '') FROM events
		WHERE event_type IN ('claimed', 'status_changed') ORDER BY id`)
	assert.NilError(t, err)
	history := map[string][]event{}
	byID := map[int64]event{}
	next := map[int64]event{} // claim event id → the event that ended it
	for rows.Next() {
		var e event
		var nv string
		assert.NilError(t, rows.Scan(&e.id, &e.issue, &e.typ, &e.actor, &e.comment, &nv))
		var v struct{ Status, Assignee string }
		assert.NilError(t, json.Unmarshal([]byte(nv), &v), nv)
		e.status, e.assignee = v.Status, v.Assignee
		if h := history[e.issue]; len(h) > 0 {
			next[h[len(h)-1].id] = e
		}
		history[e.issue] = append(history[e.issue], e)
		byID[e.id] = e
	}
	assert.NilError(t, rows.Err())
	assert.NilError(t, rows.Close())

	claimEvents, releases, failures, expired := 0, 0, 0, 0
	for id, h := range history {
		for i, e := range h {
			switch e.status {
			case "in_progress": // a claim: only of an issue nobody holds
				claimEvents++
				assert.Equal(t, e.assignee, e.actor)
				assert.Assert(t, strings.HasPrefix(e.comment, "bd-claim lease until "), "claim %d: %q", e.id, e.comment)
				assert.Assert(t, i == 0 || h[i-1].status == "open", "%s: claim %d while the issue was held", id, e.id)
				_, printed := claims[e.id]
				assert.Assert(t, printed, "claim event %d of %s by %s: no process printed it", e.id, id, e.actor)
			case "open": // the end of the claim before it
				assert.Assert(t, i > 0 && h[i-1].status == "in_progress", "%s: event %d ends no claim", id, e.id)
				prev := h[i-1]
				assert.Equal(t, e.assignee, "")
				switch {
				case strings.HasPrefix(e.comment, "bd-claim released: "):
					releases++
					assert.Equal(t, e.actor, prev.actor, "%s released by another agent than the holder", id)
				case strings.HasPrefix(e.comment, "bd-claim failed: "):
					failures++
					assert.Equal(t, e.actor, prev.actor, "%s failed by another agent than the holder", id)
				case strings.HasPrefix(e.comment, "bd-claim expired: "):
					expired++
					assert.Assert(t, is.Contains(e.comment, fmt.Sprintf("lease of %s (claim %d) ended", prev.actor, prev.id)))
				default:
					t.Errorf("%s: unexpected event %d: %q", id, e.id, e.comment)
				}
			default:
				t.Errorf("%s: event %d has status %q", id, e.id, e.status)
			}
		}
		// No lost update: the row is what its last event says.
		var status, assignee string
		assert.NilError(t, conn.QueryRow("SELECT status, COALESCE(assignee, '') FROM issues WHERE id = ?", id).Scan(&status, &assignee))
		last := h[len(h)-1]
		assert.Equal(t, status, last.status, id)
		assert.Equal(t, assignee, last.assignee, id)
		if status == "in_progress" {
			assert.Equal(t, assignee, last.actor, "%s: held by %s but last claimed by %s", id, assignee, last.actor)
		}
		// An issue abandoned by its third failure is never handed out again.
		n := 0
		for _, e := range h {
			if strings.HasPrefix(e.comment, "bd-claim failed: ") {
				n++
			} else if n >= 3 && e.status == "in_progress" {
				t.Errorf("%s: claim %d after it was abandoned", id, e.id)
			}
		}
		labelled := claimtest.Count(t, conn, "SELECT count(*) FROM labels WHERE issue_id = ? AND label = 'claim:abandoned'", id)
		assert.Equal(t, labelled == 1, n >= 3, "%s: %d failures, labelled %d", id, n, labelled)
	}
	// Every output matches the database, and nothing was written that no
	// process reported.
	assert.Equal(t, claimEvents, len(claims))
	assert.Equal(t, releases, kinds["release"][0])
	assert.Equal(t, failures, kinds["failed"][0])
	assert.Equal(t, expired, takeovers+reapedN)
	for cid, op := range claims {
		e := byID[cid]
		assert.Equal(t, e.issue, op.out.Issue.ID)
		assert.Equal(t, e.actor, op.agent)
		if h := op.out.TookOver; h != nil {
			old, end := byID[h.ClaimID], next[h.ClaimID]
			assert.Equal(t, old.issue, e.issue)
			assert.Equal(t, old.actor, h.Agent)
			assert.Equal(t, end.actor, op.agent, "takeover of claim %d", h.ClaimID)
			assert.Assert(t, strings.HasPrefix(end.comment, "bd-claim expired: "))
			assert.Equal(t, next[end.id].id, cid, "the takeover's claim follows the expiry")
		}
	}
	for _, op := range ops {
		switch {
		case op.exit != 0:
		case op.kind == "release" || op.kind == "failed":
			end := next[op.claimID]
			assert.Equal(t, end.actor, op.agent, "release of claim %d", op.claimID)
			assert.Assert(t, strings.HasPrefix(end.comment, map[string]string{"release": "bd-claim released: ", "failed": "bd-claim failed: "}[op.kind]))
		case op.kind == "reap":
			for _, x := range op.out.Reaped {
				end := next[x.ClaimID]
				assert.Equal(t, end.actor, op.agent, "reap of claim %d", x.ClaimID)
				assert.Assert(t, is.Contains(end.comment, "reaped by "+op.agent))
			}
		}
	}
}

// start starts bd-claim in dir without waiting for it.
func start(t *testing.T, dir string, env []string, args ...string) *icmd.Result {
	t.Helper()
	r := icmd.StartCmd(icmd.Command(binary, args...), icmd.Dir(dir),
		icmd.WithEnv(append(baseEnv(), env...)...))
	assert.NilError(t, r.Error)
	t.Cleanup(func() {
		if r.Cmd.ProcessState == nil {
			_ = r.Cmd.Process.Kill()
			_ = r.Cmd.Wait()
		}
	})
	return r
}

// waitForLog polls a started bd-claim's stderr for a log message.
func waitForLog(t *testing.T, r *icmd.Result, msg string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(r.Stderr(), `"msg":"`+msg+`"`) {
			return
		}
	}
	t.Fatalf("no %s in 10s; stderr: %s", msg, r.Stderr())
}

// A signal stops a waiting claim at once: exit 130, INTERRUPTED, nothing
// written.
func TestWaitSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			root := claimtest.Fixture(t, "0.49.6")
			db := claimtest.DBPath(root)
			files, sum := listFiles(t, root), claimtest.FileSum(t, db)
			r := start(t, root, nil, "--agent", "w", "--label", "no-such-label", "--wait", "30s", "--log-level", "debug")
			waitForLog(t, r, "issue_claim_waiting")
			time.Sleep(300 * time.Millisecond)
			assert.Equal(t, r.Stdout(), "", "it should still be waiting")
			sent := time.Now()
			assert.NilError(t, r.Cmd.Process.Signal(sig))
			icmd.WaitOnCmd(5*time.Second, r)
			took := time.Since(sent)
			assert.Assert(t, !r.Timeout, "still running 5s after %s", sig)
			assert.Assert(t, took < 2*time.Second, "exited %s after %s", took, sig)
			assert.Equal(t, r.ExitCode, 130, "stdout %q stderr %q", r.Stdout(), r.Stderr())
			var out result
			assert.NilError(t, json.Unmarshal([]byte(r.Stdout()), &out), r.Stdout())
			assert.Equal(t, out.Status, "error")
			assert.Equal(t, out.Error.Code, claim.EInterrupted)
			assert.Assert(t, is.Contains(out.Error.Message, "nothing was written"))
			assert.Assert(t, is.Contains(r.Stderr(), `"code":"INTERRUPTED"`))
			assert.Equal(t, claimtest.FileSum(t, db), sum, "database changed")
			assert.DeepEqual(t, listFiles(t, root), files)
		})
	}
}

// A waiting claim takes an issue as soon as another process releases one.
func TestWaitRelease(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	c := claimtest.Cases(t, "0.49.6")
	epic, c1, c2 := c["P_EPIC_OPEN"].ID, c["P_EPIC_OPEN_C1"].ID, c["P_EPIC_OPEN_C2"].ID
	lcOK(t, root, nil, "--agent", "holder", "--id", c1)
	lcOK(t, root, nil, "--agent", "holder", "--id", c2)
	_, r := lc(t, root, nil, "--agent", "w", "--parent", epic, "--dry-run")
	r.Assert(t, icmd.Expected{ExitCode: 3})

	began := time.Now()
	w := start(t, root, nil, "--agent", "w", "--parent", epic, "--wait", "5s", "--log-level", "debug")
	waitForLog(t, w, "issue_claim_waiting")
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, w.Stdout(), "", "it should still be waiting")
	rel := lcOK(t, root, nil, "release", "--agent", "holder", "--id", c2)
	released := time.Now()
	icmd.WaitOnCmd(10*time.Second, w)
	assert.Assert(t, !w.Timeout)
	assert.Equal(t, w.ExitCode, 0, "stdout %q stderr %q", w.Stdout(), w.Stderr())
	assert.Assert(t, time.Since(released) < 1500*time.Millisecond, "took %s after the release", time.Since(released))
	assert.Assert(t, time.Since(began) < 4*time.Second, "took %s in all", time.Since(began))
	var out result
	assert.NilError(t, json.Unmarshal([]byte(w.Stdout()), &out), w.Stdout())
	assert.Equal(t, out.Issue.ID, c2)
	assert.Equal(t, out.Issue.Assignee, "w")
	assert.Assert(t, out.ClaimID > rel.ClaimID)
}

// A wait that runs out exits 3 with the reason.
func TestWaitTimeout(t *testing.T) {
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	began := time.Now()
	out, r := lc(t, root, nil, "--agent", "w", "--label", "no-such-label", "--wait", "300ms")
	took := time.Since(began)
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Assert(t, out.Issue == nil)
	assert.Assert(t, is.Contains(out.Reason, "nothing became claimable within 300ms"))
	assert.Assert(t, took >= 300*time.Millisecond && took < 3*time.Second, "took %s", took)
	// The wait reports the reason of its last look too.
	root2 := claimtest.Fixture(t, "0.49.6")
	lcOK(t, root2, nil, "--agent", "w", "--max-held", "1")
	out, r = lc(t, root2, nil, "--agent", "w", "--max-held", "1", "--wait", "200ms")
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Equal(t, out.Reason, "nothing became claimable within 200ms (agent w already holds 1 in_progress issue (max held 1))")
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
}

// Close ends a claim: an agent whose lease expired and was taken over is
// refused (CLI and MCP) and the new holder's claim is untouched; bad input
// is refused with its code and exit status and changes nothing; the
// holder's close succeeds, a retried one is a no-op, and a dry run
// writes nothing.
func TestCloseCommand(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	c := claimtest.Cases(t, "0.49.6")
	a01, a02 := c["A01"].ID, c["A02"].ID
	db := claimtest.DBPath(root)
	old := lcOK(t, root, nil, "--agent", "old", "--id", a01, "--lease", "1s")
	time.Sleep(2100 * time.Millisecond) // the lease's end is rounded up to a second
	took := lcOK(t, root, nil, "--agent", "new", "--id", a01, "--lease", "1h")
	assert.Equal(t, took.TookOver.ClaimID, old.ClaimID)
	before := claimtest.Snapshot(t, db)
	s := serve(t, root, "old", "--quiet")
	text, isErr := s.call(t, "close", map[string]any{"id": a01, "claim_id": old.ClaimID, "reason": "done"})
	assert.Assert(t, isErr, text)
	assert.Assert(t, is.Contains(text, `"code":"ALREADY_CLAIMED"`))
	assert.Assert(t, is.Contains(text, `"holder":"new"`))
	refusals := []struct {
		code claim.Code
		exit int
		args []string
	}{
		{claim.EAlready, cli.ExitRefused, []string{"close", "--agent", "old", "--id", a01, "--claim-id", strconv.FormatInt(old.ClaimID, 10)}},
		{claim.EAlready, cli.ExitRefused, []string{"close", "--agent", "old", "--id", a01}},
		{claim.EAlready, cli.ExitRefused, []string{"close", "--agent", "new", "--id", a01, "--claim-id", strconv.FormatInt(old.ClaimID, 10)}},
		{claim.ENotClaimable, cli.ExitRefused, []string{"close", "--agent", "new", "--id", a02}},
		{claim.ENotFound, cli.ExitRefused, []string{"close", "--agent", "new", "--id", "nosuch-1"}},
		{claim.EInvalid, cli.ExitInvalid, []string{"close", "--agent", "new", "--id", ""}},
		{claim.EInvalid, cli.ExitInvalid, []string{"close", "--agent", "new", "--id", a01, "--reason", strings.Repeat("r", claim.MaxReasonLen+1)}},
		{claim.EInvalid, cli.ExitInvalid, []string{"close", "--agent", "new", "--id", a01, "--claim-id", "-1"}},
	}
	for _, r := range refusals {
		out, res := lc(t, root, nil, r.args...)
		assert.Equal(t, res.ExitCode, r.exit, "%q: %s", r.args, res.Stdout())
		assert.Equal(t, out.Error.Code, r.code, "%q", r.args)
	}
	dry := lcOK(t, root, nil, "close", "--agent", "new", "--id", a01, "--dry-run")
	assert.Assert(t, dry.DryRun && dry.ClaimID == took.ClaimID, "%+v", dry)
	assert.DeepEqual(t, claimtest.Diff(before, claimtest.Snapshot(t, db)), map[string][2][]string{})

	closed := lcOK(t, root, nil, "close", "--agent", "new", "--id", a01, "--claim-id", strconv.FormatInt(took.ClaimID, 10), "--reason", "done")
	assert.Equal(t, closed.ClaimID, took.ClaimID)
	assert.Equal(t, closed.Issue.Status, "closed")
	after := claimtest.Snapshot(t, db)
	again := lcOK(t, root, nil, "close", "--agent", "new", "--id", a01)
	assert.Assert(t, again.AlreadyClosed && again.ClaimID == 0, "%+v", again)
	assert.DeepEqual(t, claimtest.Diff(after, claimtest.Snapshot(t, db)), map[string][2][]string{})
	human := run(t, root, nil, "close", "--agent", "new", "--id", a01, "--human", "--quiet")
	assert.Equal(t, human.Stdout(), a01+" is closed already\n")

	// Through MCP: the holder closes, then its retry is a no-op.
	lcOK(t, root, nil, "--agent", "old", "--id", a02)
	dryMCP := s.callOK(t, "close", map[string]any{"id": a02, "dry_run": true})
	assert.Assert(t, dryMCP.DryRun && dryMCP.Issue.Status == "in_progress", "%+v", dryMCP)
	viaMCP := s.callOK(t, "close", map[string]any{"id": a02, "reason": "finished"})
	assert.Equal(t, viaMCP.Issue.Status, "closed")
	assert.Assert(t, s.callOK(t, "close", map[string]any{"id": a02}).AlreadyClosed)
}
