package sqlite

import (
	"context"
	"sync"

	"github.com/bdclaim/bd-claim/claim"
)

// open opens a Store on the SQLite workspace ws with this engine, as
// claim/engines.Open does.
func open(ctx context.Context, ws claim.Workspace, o claim.Options) (*claim.Store, error) {
	e, err := Open(ctx, ws.DBPath, ws.BeadsDir, o.Config())
	if err != nil {
		return nil, err
	}
	s := claim.New(ws, e, o)
	opened.Store(s, e)
	return s, nil
}

// opened are the engines of the Stores open opened, for the tests that look
// into them (engineOf).
var opened sync.Map

// engineOf is the engine of a Store that open opened.
func engineOf(s *claim.Store) *Engine {
	e, _ := opened.Load(s)
	return e.(*Engine)
}
