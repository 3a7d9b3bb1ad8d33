package claim

import "strings"

// Beads priorities: 0 is the most urgent, 4 the backlog.
const (
	PriorityCritical = 0
	PriorityBacklog  = 4
)

var priorityNames = map[string]int{"critical": 0, "high": 1, "medium": 2, "low": 3, "backlog": 4}

// ParsePriority reads a priority as bd spells it (0-4, P0-P4) or by name
// (critical, high, medium, low, backlog).
func ParsePriority(s string) (int, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if p, ok := priorityNames[v]; ok {
		return p, nil
	}
	v = strings.TrimPrefix(v, "p")
	if len(v) == 1 && v[0] >= '0' && v[0] <= '4' {
		return int(v[0] - '0'), nil
	}
	return 0, Errorf(EInvalid, "unknown priority %q: use 0-4, P0-P4 or critical|high|medium|low|backlog", s)
}
