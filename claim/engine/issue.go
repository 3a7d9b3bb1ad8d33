package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Issue is a claimed (or, in a dry run, claimable) issue as the JSON
// contract shows it.
type Issue struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Status      string   `json:"status"`
	Assignee    string   `json:"assignee"`
	Priority    int      `json:"priority"`
	IssueType   string   `json:"issue_type"`
	Labels      []string `json:"labels"`
	ContentHash string   `json:"content_hash"`
	ExternalRef *string  `json:"external_ref"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// Row is an issue as an engine read it for a write: the contract's fields,
// what the engine keeps of it for its writes (its columns for the content
// hash, its row_lock...), and, for an in_progress issue a claim takes
// over, its claim.
type Row struct {
	Issue
	Data  any    // the engine's own reading of the row
	Claim *State // the claim a takeover ends (Tx.Next, Tx.Find), nil when the issue is open
}

// SetLabel leaves r's labels as after label's addition (add) or removal,
// sorted.
func (r *Row) SetLabel(label string, add bool) {
	r.Labels = slices.DeleteFunc(r.Labels, func(l string) bool { return l == label })
	if add {
		r.Labels = append(r.Labels, label)
		slices.Sort(r.Labels)
	}
}

// Version is a bd release, major.minor.patch.
type Version [3]int

// ParseVersion reads "0.49.6" (a leading v and a suffix after - or space are ignored).
func ParseVersion(s string) (Version, bool) {
	var v Version
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "- +"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// AtLeast reports whether v >= major.minor.patch.
func (v Version) AtLeast(major, minor, patch int) bool {
	w := Version{major, minor, patch}
	for i := range v {
		if v[i] != w[i] {
			return v[i] > w[i]
		}
	}
	return true
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }
