package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
)

// attempt is what a failed release reports.
type attempt struct {
	Failures  int        `json:"failures"`
	RetryAt   *time.Time `json:"retry_at"` // null when abandoned
	Abandoned bool       `json:"abandoned"`
}

// reset is what a reset reports.
type reset struct {
	Cleared      int  `json:"cleared_failures"`
	LabelRemoved bool `json:"label_removed"`
}

// agentCheck is the check of the commands whose request is the agent
// alone.
func agentCheck(o *options) error { return claim.ValidateAgent(o.req.Agent) }

// done is the log message of a command that did what it was asked (event
// is its prefix): EVENT_success, or EVENT_dry_run for a dry run, which
// changed nothing and must not count as a claim, a close or a reap.
func done(event string, dryRun bool) string {
	if dryRun {
		return event + "_dry_run"
	}
	return event + "_success"
}

var releaseCommand = &command{
	name:  "release",
	event: "issue_release",
	usage: "bd-claim release --agent NAME --id ISSUE [--claim-id N] [--reason TEXT] [--failed]",
	about: "Give a held issue back: in_progress → open, unassigned, as bd update writes it.\n" +
		"--failed records a failed attempt: the issue then waits out a backoff, and is\n" +
		"abandoned (labelled, never handed out by claim-next) after max-failures.",
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.StringVar(&o.req.ID, "id", "", "the issue to give back (required)")
		fs.Int64Var(&o.req.ClaimID, "claim-id", 0, "release only while the agent holds the issue under this claim")
		fs.StringVar(&o.reason, "reason", "", "why: kept in the event, and shown by bd show as a comment")
		fs.BoolVar(&o.failed, "failed", false, "the attempt failed: counts towards backoff and abandonment")
		settingFlags(fs, o, policyNames...)
	},
	check: func(o *options) error {
		o.release = claim.ReleaseRequest{Agent: o.req.Agent, ID: o.req.ID, ClaimID: o.req.ClaimID, Reason: o.reason, Failed: o.failed}
		return o.release.Validate()
	},
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		rel, err := s.Release(ctx, o.release)
		if err != nil {
			log.Error("issue_release_error", "agent", o.req.Agent, "issue_id", o.req.ID, errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		env := envelope{Status: "ok", Agent: o.req.Agent, Issue: rel.Issue, ClaimID: rel.ClaimID}
		if o.failed {
			env.Attempt = &attempt{Failures: rel.Failures, RetryAt: rel.RetryAt, Abandoned: rel.Abandoned}
		}
		log.Info("issue_release_success", "agent", o.req.Agent, "issue_id", o.req.ID, "claim_id", rel.ClaimID, "failed", o.failed, "failures", rel.Failures, "abandoned", rel.Abandoned, o.elapsed())
		if !out.human {
			out.json(env)
			return ExitClaimed
		}
		fmt.Fprintf(out.w, "released %s (claim %d)", rel.Issue.ID, rel.ClaimID)
		switch {
		case rel.Abandoned:
			fmt.Fprintf(out.w, ": failed attempt %d, abandoned (bd-claim reset --id %s hands it out again)", rel.Failures, rel.Issue.ID)
		case o.failed:
			fmt.Fprintf(out.w, ": failed attempt %d, claimable again from %s", rel.Failures, rel.RetryAt.Format(time.RFC3339))
		}
		fmt.Fprintln(out.w)
		return ExitClaimed
	},
}

var closeCommand = &command{
	name:  "close",
	event: "issue_close",
	usage: "bd-claim close --agent NAME --id ISSUE [--claim-id N] [--reason TEXT] [--dry-run]",
	about: "Close a held issue whose work is done, as the workspace's bd writes `bd close ID --reason`\n" +
		"by the agent, the issues it blocked unblocked as that bd does. Only the holder closes\n" +
		"(with --claim-id, only under that claim); an issue closed already, assigned to the\n" +
		"agent, is closed again without a write.",
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.StringVar(&o.req.ID, "id", "", "the held issue to close (required)")
		fs.Int64Var(&o.req.ClaimID, "claim-id", 0, "close only while the agent holds the issue under this claim")
		fs.StringVar(&o.reason, "reason", "", "the close reason, as bd close --reason (default: Closed)")
		fs.BoolVar(&o.req.DryRun, "dry-run", false, "check that the close would succeed; change nothing")
	},
	check: func(o *options) error {
		o.close = claim.CloseRequest{Agent: o.req.Agent, ID: o.req.ID, ClaimID: o.req.ClaimID, Reason: o.reason, DryRun: o.req.DryRun}
		return o.close.Validate()
	},
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		res, err := s.CloseIssue(ctx, o.close)
		if err != nil {
			log.Error("issue_close_error", "agent", o.req.Agent, "issue_id", o.req.ID, errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		log.Info(done("issue_close", o.req.DryRun), "agent", o.req.Agent, "issue_id", o.req.ID, "claim_id", res.ClaimID, "dry_run", o.req.DryRun, "already", res.Already, o.elapsed())
		if !out.human {
			out.json(envelope{Status: "ok", Agent: o.req.Agent, DryRun: o.req.DryRun, Issue: res.Issue, ClaimID: res.ClaimID, AlreadyClosed: res.Already})
			return ExitClaimed
		}
		switch {
		case res.Already:
			fmt.Fprintf(out.w, "%s is closed already\n", res.Issue.ID)
		case o.req.DryRun:
			fmt.Fprintf(out.w, "would close %s (claim %d)\n", res.Issue.ID, res.ClaimID)
		default:
			fmt.Fprintf(out.w, "closed %s (claim %d)\n", res.Issue.ID, res.ClaimID)
		}
		return ExitClaimed
	},
}

var heartbeatCommand = &command{
	name:  "heartbeat",
	event: "issue_heartbeat",
	usage: "bd-claim heartbeat --agent NAME --id ISSUE [--claim-id N] [--lease DURATION]",
	about: "Renew the lease of a held issue from now. Adds no event: the claim event's lease is\n" +
		"rewritten in place. Without --lease the claim's own lease length is used.",
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.StringVar(&o.req.ID, "id", "", "the held issue (required)")
		fs.Int64Var(&o.req.ClaimID, "claim-id", 0, "renew only while the agent holds the issue under this claim")
		fs.StringVar(&o.lease, "lease", "", "the new lease, from now (default or 0: the claim's lease length)")
	},
	check: func(o *options) error {
		o.heartbeat = claim.HeartbeatRequest{Agent: o.req.Agent, ID: o.req.ID, ClaimID: o.req.ClaimID}
		if o.lease != "" { // the lease setting's rule, not its value: a heartbeat keeps the claim's length
			if err := o.overrides.Set("lease", o.lease, "--lease"); err != nil {
				return err
			}
			o.heartbeat.Lease = o.overrides.Given().Lease
		}
		return o.heartbeat.Validate()
	},
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		res, err := s.Heartbeat(ctx, o.heartbeat)
		if err != nil {
			log.Error("issue_heartbeat_error", "agent", o.req.Agent, "issue_id", o.req.ID, errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		log.Info("issue_heartbeat_success", "agent", o.req.Agent, "issue_id", o.req.ID, "claim_id", res.ClaimID, "lease_expires_at", res.Lease.Until, o.elapsed())
		if !out.human {
			out.json(envelope{Status: "ok", Agent: o.req.Agent, Issue: res.Issue, ClaimID: res.ClaimID, LeaseExpiresAt: leaseUntil(res.Lease)})
			return ExitClaimed
		}
		fmt.Fprintf(out.w, "%s holds %s (claim %d), leased until %s\n", o.req.Agent, res.Issue.ID, res.ClaimID, res.Lease.Until.Format(time.RFC3339))
		return ExitClaimed
	},
}

var resetCommand = &command{
	name:         "reset",
	event:        "issue_reset",
	usage:        "bd-claim reset --id ISSUE [--agent NAME]",
	about:        "Clear an issue's failed attempts and remove its abandoned label, so that claim-next\nhands it out again. --agent (default $BEADS_ACTOR, else $BD_ACTOR, else bd-claim) is recorded as the actor.",
	actorDefault: true,
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.StringVar(&o.req.ID, "id", "", "the issue (required)")
		settingFlags(fs, o, policyNames...)
	},
	check: func(o *options) error {
		o.reset = claim.ResetRequest{Actor: o.req.Agent, ID: o.req.ID}
		return o.reset.Validate()
	},
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		r, err := s.Reset(ctx, o.reset)
		if err != nil {
			log.Error("issue_reset_error", "agent", o.req.Agent, "issue_id", o.req.ID, errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		log.Info("issue_reset_success", "agent", o.req.Agent, "issue_id", o.req.ID, "cleared_failures", r.Cleared, "label_removed", r.Label, o.elapsed())
		if !out.human {
			out.json(envelope{Status: "ok", Agent: o.req.Agent, Issue: r.Issue, Reset: &reset{r.Cleared, r.Label}})
			return ExitClaimed
		}
		fmt.Fprintf(out.w, "reset %s: %s cleared", r.Issue.ID, plural(r.Cleared, "failed attempt", "failed attempts"))
		if r.Label {
			fmt.Fprintf(out.w, ", abandoned label removed")
		}
		fmt.Fprintln(out.w)
		return ExitClaimed
	},
}

var reapCommand = &command{
	name:  "reap",
	event: "reap",
	usage: "bd-claim reap [--older-than D] [--dry-run] [--agent NAME]",
	about: "Return stale claims to open, unassigned, in one transaction: every claim whose holder asked\n" +
		"for a lease (--lease) that has expired. With --older-than D, a grace window instead: every\n" +
		"claim whose lease (asked for, or bd's own on Dolt) ended at least D ago, and every claim\n" +
		"without a lease made at least D ago, as bd reclaim --older-than D does: run it from a\n" +
		"supervisor to recover the issues of agents that died. --agent (default $BEADS_ACTOR, else $BD_ACTOR, else bd-claim) is recorded as the actor.",
	actorDefault: true,
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.StringVar(&o.olderThan, "older-than", "", "reap past this grace window instead (e.g. 10m; 0s: at once): leases that ended at least this long ago, claims without a lease made at least this long ago")
		fs.BoolVar(&o.req.DryRun, "dry-run", false, "list the claims it would reap; change nothing")
	},
	check: func(o *options) error {
		if err := agentCheck(o); err != nil || !o.fs.Changed("older-than") {
			return err
		}
		d, err := claim.ParseDuration("older-than", o.olderThan, claim.MaxWait)
		o.reap.OlderThan = &d
		return err
	},
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		req := o.reap
		req.Actor, req.DryRun = o.req.Agent, o.req.DryRun
		reaped, err := s.Reap(ctx, req)
		if err != nil {
			log.Error("reap_error", "agent", o.req.Agent, errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		log.Info(done("reap", o.req.DryRun), "agent", o.req.Agent, "dry_run", o.req.DryRun, "reaped", len(reaped), o.elapsed())
		if !out.human {
			out.json(struct {
				Status string          `json:"status"`
				Agent  string          `json:"agent"`
				DryRun bool            `json:"dry_run,omitempty"`
				Reaped []claim.Expired `json:"reaped"`
			}{"ok", o.req.Agent, o.req.DryRun, reaped})
			return ExitClaimed
		}
		verb := "reaped"
		if o.req.DryRun {
			verb = "would reap"
		}
		fmt.Fprintf(out.w, "%s %s\n", verb, plural(len(reaped), "stale claim", "stale claims"))
		for _, e := range reaped {
			ended := "held without a lease"
			if e.LeaseUntil != nil {
				ended = "lease ended " + e.LeaseUntil.Format(time.RFC3339)
			}
			if e.ClaimedAt != nil {
				ended += ", claimed " + e.ClaimedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(out.w, "  %s  held by %s (claim %d), %s\n", e.ID, e.Holder, e.ClaimID, ended)
		}
		return ExitClaimed
	},
}
