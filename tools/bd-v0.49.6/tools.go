//go:build tools

// Package tools pins the real Beads CLI (bd) v0.49.6 so scripts/build-bd.sh can build it
// reproducibly: go build github.com/steveyegge/beads/cmd/bd (CGO_ENABLED=0).
package tools

import _ "github.com/steveyegge/beads/cmd/bd"
