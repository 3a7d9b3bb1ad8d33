package claim

import "strings"

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

// Validate checks the filters and normalises empty lists to [] so that the
// JSON echo of the filters is stable.
func (f *Filters) Validate() error {
	if f.Sort == "" {
		f.Sort = SortPriority
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
		}
	}
	if f.MinPriority != nil && (*f.MinPriority < PriorityCritical || *f.MinPriority > PriorityBacklog) {
		return Errorf(EInvalid, "min priority %d is outside 0-4", *f.MinPriority)
	}
	return nil
}
