package dolt

import (
	"context"
	"sync"

	"github.com/bdclaim/bd-claim/claim"
)

// open opens a Store on the Dolt workspace ws with this engine, in the
// mode ws resolved to, as claim/engines.Open does.
func open(ctx context.Context, ws claim.Workspace, o claim.Options) (*claim.Store, error) {
	var e *Engine
	var err error
	switch c := o.Config(); {
	case ws.Proxied != nil:
		e, err = OpenProxied(ctx, *ws.Proxied, ws.BeadsDir, c)
	case ws.Embedded != nil:
		e, err = OpenEmbedded(ctx, *ws.Embedded, ws.BeadsDir, c)
	default:
		e, err = OpenServer(ctx, *ws.Dolt, ws.BeadsDir, c)
	}
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
