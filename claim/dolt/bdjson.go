package dolt

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"time"

	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// What bd v1.3.0 prints with --json for its own claims (bd-claim
// --bd-json): `bd update ID --claim --json` lists its types.Issue as
// GetIssueInTx reads it after the claim (Issue); `bd ready --claim --json`
// lists a types.IssueWithCounts (ReadyIssue), the issue with its
// dependency records, three counts and its parent, read in the claim's
// transaction. Proxied-server mode reads some of it otherwise
// (doltStyle.updateLabels, doltStyle.uow).

// Dependency mirrors bd v1.3.0's types.Dependency, as its --json prints a
// dependency record.
type Dependency struct {
	ID          string    `json:"id,omitempty"` // never read by the hydration of a claim
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
	Metadata    string    `json:"metadata,omitempty"` // the JSON column's text, as a string
	ThreadID    string    `json:"thread_id,omitempty"`
}

// ReadyIssue mirrors bd v1.3.0's types.IssueWithCounts: the issue's
// fields, then its counts and its parent (the target of its first
// parent-child record).
type ReadyIssue struct {
	*Issue
	DependencyCount int     `json:"dependency_count"` // its blocks records
	DependentCount  int     `json:"dependent_count"`  // the blocks records whose target it is
	CommentCount    int     `json:"comment_count"`
	Parent          *string `json:"parent,omitempty"`
}

// BdJSON is issue id, now, as bd v1.3.0 prints it in the list of its own
// claim's --json: `bd update ID --claim`'s (byID: the issue, without its
// labels in proxied-server mode, whose update strips them), else `bd
// ready --claim`'s (readyIssue).
func (t *tx) BdJSON(id string, byID bool) ([]byte, error) {
	snap, err := t.snapshot(id)
	if err != nil {
		return nil, err
	}
	iss := snap.bd
	if byID {
		if !t.e.style.updateLabels {
			iss.Labels = nil
		}
		return json.Marshal(iss)
	}
	r, err := t.readyIssue(&iss, snap.table)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// readyIssue hydrates iss (of table) as bd's claim-next does in its
// transaction. Server and embedded mode (issueops.HydrateReadyRowInTx)
// order the records by target (bd's ORDER BY issue_id, depends_on_id,
// type, id, of which only the target decides for one issue: an issue
// depends on a target once), print a record's metadata as stored, and
// count an issue's and a wisp's records and comments in both the issues'
// tables and the wisp tables. Proxied-server mode (the unit of work's
// hydrateReadyRow) keeps the server's order of the records, drops an
// empty or {} metadata, and counts in the issues' tables only.
func (t *tx) readyIssue(iss *Issue, table Table) (ReadyIssue, error) {
	raw, err := table.DependencyRecords(t.ctx, t.conn, iss.ID)
	// A NULL time is the zero time, a NULL text empty, as bd scans them;
	// metadata is the JSON column's text as the link hands it to bd
	// (doltStyle.spacedJSON): the records come spaced, as computed JSON.
	var recs []struct {
		Dependency
		Metadata json.RawMessage `json:"metadata"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &recs)
	}
	if err != nil {
		return ReadyIssue{}, err
	}
	deps := make([]*Dependency, len(recs))
	for i, r := range recs {
		deps[i] = &r.Dependency
		switch {
		case string(r.Metadata) == "null":
		case t.e.style.spacedJSON:
			deps[i].Metadata = string(r.Metadata)
		default:
			var b bytes.Buffer
			_ = json.Compact(&b, r.Metadata) // valid: it was decoded
			deps[i].Metadata = b.String()
		}
	}
	n, err := t.e.dq.IssueCounts(t.ctx, t.conn, doltdb.IssueCountsParams{ID: iss.ID})
	if err != nil {
		return ReadyIssue{}, err
	}
	r := ReadyIssue{Issue: iss, DependencyCount: int(n.Blockers), DependentCount: int(n.Dependents), CommentCount: int(n.Comments)}
	if t.e.style.uow {
		for _, d := range deps {
			if d.Metadata == "{}" {
				d.Metadata = ""
			}
		}
	} else {
		slices.SortStableFunc(deps, func(a, b *Dependency) int {
			return cmp.Or(cmp.Compare(a.DependsOnID, b.DependsOnID), cmp.Compare(a.Type, b.Type))
		})
		r.DependencyCount += int(n.WispBlockers)
		r.DependentCount += int(n.WispDependents)
		r.CommentCount += int(n.WispComments)
	}
	iss.Dependencies = deps
	if i := slices.IndexFunc(deps, func(d *Dependency) bool { return d.Type == "parent-child" }); i >= 0 {
		r.Parent = &deps[i].DependsOnID
	}
	return r, nil
}
