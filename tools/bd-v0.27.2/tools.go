//go:build tools

// Package tools pins the real Beads CLI (bd) v0.27.2 so scripts/build-bd.sh can build it
// reproducibly: go build github.com/steveyegge/beads/cmd/bd (CGO_ENABLED=0), from the
// source archive beside it (the module proxy does not serve this version; see README.md).
package tools

import _ "github.com/steveyegge/beads/cmd/bd"
