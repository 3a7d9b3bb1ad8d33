package claim

import (
	"context"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Ping reaches the database as an operation does, and runs the checks of
// Open that the engine leaves to its first operation (embedded Dolt opens
// the engine only then): its error is the one an operation would report
// now, nil when the database is there and usable. A long-lived user (the
// MCP server) calls it before it serves.
func (s *Store) Ping(ctx context.Context) error {
	return s.look(ctx, "open "+s.Workspace.DBPath, func(engine.Tx) error { return nil })
}
