package claim

import (
	"strings"
	"unicode/utf8"
)

// Sort is the order in which ready issues are handed out.
type Sort string

// The sort policies. SortPriority is bd-claim's default; SortHybrid and
// SortOldest reproduce `bd ready --sort hybrid|oldest`.
const (
	SortPriority Sort = "priority" // priority ASC, created_at ASC, id ASC
	SortHybrid   Sort = "hybrid"   // issues created in the last 48h by priority, then older ones by age
	SortOldest   Sort = "oldest"   // created_at ASC, id ASC
)

// Filters narrow which ready issues an agent may claim.
type Filters struct {
	OnlyUnassigned bool     `json:"only_unassigned"` // skip open issues already assigned to this agent
	IncludeLabels  []string `json:"include_labels"`  // the issue has all of them
	ExcludeLabels  []string `json:"exclude_labels"`  // the issue has none of them
	MinPriority    *int     `json:"min_priority"`    // priority <= MinPriority (0 is the most urgent)
	Types          []string `json:"types"`           // issue_type is one of them
	Parent         string   `json:"parent"`          // descendants of this issue through parent-child edges
	Sort           Sort     `json:"sort"`
}

// Validate checks the filters and normalises them: empty lists to [] so
// that the JSON echo of the filters is stable, and the enumerated values
// (the sort, the types) to lower case, since they are matched without
// regard to case. The sort is a closed set: an unknown one is refused.
// Types are an open set (a workspace may define its own): an unknown type
// matches no issue. Labels, types and the parent are at most MaxValueLen
// characters, as bd stores them.
func (f *Filters) Validate() error {
	f.Sort = Sort(strings.ToLower(strings.TrimSpace(string(f.Sort))))
	if f.Sort == "" {
		f.Sort = SortPriority
	}
	if err := checkLength("the parent", f.Parent); err != nil {
		return err
	}
	switch f.Sort {
	case SortPriority, SortHybrid, SortOldest:
	default:
		return Errorf(EInvalid, "unknown sort %q: use priority, hybrid or oldest", f.Sort)
	}
	for _, list := range []*[]string{&f.IncludeLabels, &f.ExcludeLabels, &f.Types} {
		if *list == nil {
			*list = []string{}
		}
		for _, v := range *list {
			if strings.TrimSpace(v) == "" {
				return Errorf(EInvalid, "empty value in --label, --exclude-label or --type")
			}
			if err := checkLength("a value of --label, --exclude-label or --type", v); err != nil {
				return err
			}
		}
	}
	types := make([]string, len(f.Types)) // a copy: the caller's slice stays as given
	for i, t := range f.Types {
		types[i] = strings.ToLower(strings.TrimSpace(t))
	}
	f.Types = types
	if f.MinPriority != nil && (*f.MinPriority < PriorityCritical || *f.MinPriority > PriorityBacklog) {
		return Errorf(EInvalid, "min priority %d is outside 0-4", *f.MinPriority)
	}
	return nil
}

// MaxValueLen is the longest issue id, label, type or parent accepted, in
// characters: bd's columns are VARCHAR(255) on Dolt.
const MaxValueLen = 255

// checkLength refuses a value longer than MaxValueLen, without echoing it.
func checkLength(what, v string) error {
	if n := utf8.RuneCountInString(v); n > MaxValueLen {
		return Errorf(EInvalid, "%s is %d characters long; the limit is %d", what, n, MaxValueLen)
	}
	return nil
}
