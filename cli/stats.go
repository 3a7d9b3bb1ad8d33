package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
)

var statsCommand = &command{
	name:         "stats",
	event:        "stats",
	usage:        "bd-claim stats [--json|--human]",
	about:        "Show the claim state of the workspace: ready issues by priority, blocked, held per\nagent with each claim's age, expired leases, backoff, abandoned, and last hour's events.",
	actorDefault: true,
	flags: func(fs *pflag.FlagSet, o *options) {
		settingFlags(fs, o, policyNames...)
	},
	check: agentCheck,
	do: func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
		st, err := s.Stats(ctx)
		if err != nil {
			log.Error("stats_error", errAttr(err), o.elapsed())
			return out.fail(exitCode(err), err)
		}
		log.Info("stats_success", "ready", st.Ready, "open", st.Open, o.elapsed())
		if !out.human {
			out.json(struct {
				Status string `json:"status"`
				claim.Stats
			}{"ok", st})
			return ExitClaimed
		}
		humanStats(out, st)
		return ExitClaimed
	},
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// age prints a duration the short way: 45s, 12m, 3h5m, 2d4h.
func age(d time.Duration) string {
	switch d = d.Truncate(time.Second); {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

func humanStats(out output, st claim.Stats) {
	w := tabwriter.NewWriter(out.w, 0, 0, 2, ' ', 0)
	var prio []string
	for _, k := range sortedKeys(st.ReadyByPriority) {
		prio = append(prio, fmt.Sprintf("%s %d", k, st.ReadyByPriority[k]))
	}
	held := 0
	for _, a := range st.InProgress {
		held += len(a.Issues)
	}
	fmt.Fprintf(w, "ready\t%d\t(%s)\n", st.Ready, strings.Join(prio, ", "))
	fmt.Fprintf(w, "open\t%d\t(%d blocked)\n", st.Open, st.Blocked)
	fmt.Fprintf(w, "in progress\t%d\t(%s, %s)\n", held,
		plural(len(st.InProgress), "agent", "agents"), plural(len(st.ExpiredLeases), "expired lease", "expired leases"))
	fmt.Fprintf(w, "backoff\t%d\t\n", len(st.Backoff))
	fmt.Fprintf(w, "abandoned\t%d\t\n", len(st.Abandoned))
	h := st.LastHour
	fmt.Fprintf(w, "last hour\t\t%s, %s, %s, %s, %s\n", plural(h.Claims, "claim", "claims"), plural(h.Releases, "release", "releases"),
		plural(h.Closes, "close", "closes"), plural(h.Failures, "failure", "failures"), plural(h.Reclaims, "reclaim", "reclaims"))
	if len(st.InProgress) > 0 {
		fmt.Fprintln(w, "\nAGENT\tISSUE\tCLAIM\tAGE\tLEASE")
		for _, a := range st.InProgress {
			for _, i := range a.Issues {
				claimAge, lease := "?", "-"
				if i.ClaimedAt != nil {
					claimAge = age(time.Duration(i.AgeSeconds) * time.Second)
				}
				if i.LeaseUntil != nil {
					lease = "until " + i.LeaseUntil.Format(time.RFC3339)
					if i.Expired {
						lease = "EXPIRED " + i.LeaseUntil.Format(time.RFC3339)
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", cmp.Or(a.Agent, "(nobody)"), i.ID, i.ClaimID, claimAge, lease)
			}
		}
	}
	if len(st.Backoff)+len(st.Abandoned) > 0 {
		fmt.Fprintln(w, "\nISSUE\tFAILURES\tSTATE")
		for _, b := range st.Backoff {
			fmt.Fprintf(w, "%s\t%d\tbackoff until %s\n", b.ID, b.Failures, b.RetryAt.Format(time.RFC3339))
		}
		for _, a := range st.Abandoned {
			state := "abandoned"
			if a.Labelled {
				state += " (labelled " + st.Policy.AbandonedLabel + ")"
			}
			fmt.Fprintf(w, "%s\t%d\t%s\n", a.ID, a.Failures, state)
		}
	}
	w.Flush()
}
