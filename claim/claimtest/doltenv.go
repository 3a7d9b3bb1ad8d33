package claimtest

import "strings"

// Getenv looks a variable up in the environment bd runs with in the
// workspace, so that bd-claim's discovery sees what bd sees.
func (w *DoltWorkspace) Getenv(key string) string {
	for _, kv := range w.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
