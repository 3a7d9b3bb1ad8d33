package dolt

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/bdclaim/bd-claim/claim/engine"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// What bd v1.3.0's claim by id (`bd update ID --claim`,
// issueops.ClaimIssueInTx, and its dual for proxied-server mode) takes
// beyond an open issue assigned to nobody or to the claiming actor, read
// from the workspace's configuration at each claim: an issue whose status
// is a custom status of category active, and one assigned to a claim pool,
// a group placeholder that any member may take. An issue assigned to the
// actor under another spelling of its name counts as the actor's
// (actorMatches).

// Eligible reads what bd v1.3.0's claim by id also takes: the custom
// statuses of category active (ClaimableSourceStatusesInTx) and the claim
// pools (ClaimPoolAliasesInTx).
func (t *tx) Eligible() (engine.Eligible, error) {
	row, err := t.e.dq.ClaimEligibility(t.ctx, t.conn)
	if err != nil {
		return engine.Eligible{}, err
	}
	return eligible(row, t.e.beads), nil
}

// eligible is what row, the workspace's claim configuration, and the
// workspace's config.yaml (in beadsDir) let a claim by id take, as bd
// v1.3.0 resolves its custom statuses (ResolveCustomStatusesDetailedInTx):
// the custom_statuses table when it has rows, else config status.custom,
// else status.custom of config.yaml; a value bd cannot parse is no custom
// status (its degraded mode). The claim pools are config claim.pools,
// comma-separated, trimmed (ParseClaimPools), matched exactly.
func eligible(row doltdb.ClaimEligibilityRow, beadsDir string) engine.Eligible {
	var el engine.Eligible
	var table [][2]string // [name, category]
	_ = json.Unmarshal([]byte(row.TableStatuses), &table)
	switch {
	case len(table) > 0:
		for _, s := range table {
			if s[1] == "active" {
				el.Statuses = append(el.Statuses, s[0])
			}
		}
	case row.ConfigStatuses != "":
		el.Statuses = activeStatuses(row.ConfigStatuses)
	default:
		el.Statuses = activeStatuses(strings.Join(engine.ConfigList(beadsDir, "status.custom"), ","))
	}
	slices.Sort(el.Statuses)
	for _, p := range strings.Split(row.Pools, ",") {
		if p = strings.TrimSpace(p); p != "" {
			el.Pools = append(el.Pools, p)
		}
	}
	return el
}

// customStatus is a custom status as bd v1.3.0's ParseCustomStatusConfig
// takes one: a name (lower case, letter first), and after a colon one of
// the categories.
var customStatus = regexp.MustCompile(`^([a-z][a-z0-9_-]*)(?::(active|wip|done|frozen))?$`)

// builtInStatuses are the statuses a custom one may not be named as.
var builtInStatuses = []string{"open", "in_progress", "blocked", "deferred", "closed", "pinned", "hooked"}

// maxCustomStatuses is how many custom statuses bd takes at most.
const maxCustomStatuses = 50

// activeStatuses are the custom statuses of category active in a
// status.custom value ("name[:category],..."), parsed as bd v1.3.0's
// ParseCustomStatusConfig does: none at all when any entry is not a valid
// custom status (a bad name or category, a built-in name, a name given
// twice) or there are more than maxCustomStatuses.
func activeStatuses(value string) []string {
	var active, seen []string
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		m := customStatus.FindStringSubmatch(part)
		if m == nil || slices.Contains(builtInStatuses, m[1]) || slices.Contains(seen, m[1]) || len(seen) == maxCustomStatuses {
			return nil
		}
		seen = append(seen, m[1])
		if m[2] == "active" {
			active = append(active, m[1])
		}
	}
	return active
}

// sameActor is bd v1.3.0's actorMatches: two names are one identity when
// they are the same, or the same once each is canonicalActor's.
func sameActor(a, b string) bool { return a == b || canonicalActor(a) == canonicalActor(b) }

// canonicalActor is bd v1.3.0's canonicalActor: each run of '.', '_' and
// '-' becomes one '_', but for a run that is exactly "--", which becomes
// '/' (Gas City's spelling of a rig-qualified name); "" stays "".
func canonicalActor(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && strings.IndexByte("._-", s[j]) >= 0 {
			j++
		}
		switch {
		case j == i:
			b.WriteByte(s[i])
			j++
		case s[i:j] == "--":
			b.WriteByte('/')
		default:
			b.WriteByte('_')
		}
		i = j
	}
	return b.String()
}
