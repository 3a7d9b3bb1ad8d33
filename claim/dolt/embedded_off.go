//go:build !embedded

package dolt

import (
	"context"
	"database/sql"
	"time"
)

// Embedded reports whether this build links the embedded Dolt engine: not
// this one (the default build, without cgo or the engine's ~150 modules).
const Embedded = false

// OpenEmbeddedConn fails, before it touches the workspace: this build has no
// embedded engine.
func OpenEmbeddedConn(context.Context, string, string, time.Duration, Gates) (*sql.Conn, func(), error) {
	return nil, nil, ErrNotBuiltIn
}

// Locked is false: without the engine, no open finds it locked.
func Locked(error) bool { return false }
