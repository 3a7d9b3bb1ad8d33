//go:build tools

// Package tools pins the real Beads CLI (bd) v1.3.0 and dolt 2.2.0 so
// scripts/build-dolt.sh can build both reproducibly (CGO_ENABLED=1, libicu):
// go build github.com/steveyegge/beads/cmd/bd and github.com/dolthub/dolt/go/cmd/dolt.
package tools

import (
	_ "github.com/dolthub/dolt/go/cmd/dolt"
	_ "github.com/steveyegge/beads/cmd/bd"
)
