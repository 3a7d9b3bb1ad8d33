// Package engines opens a workspace (as package workspace found it) with
// its engine: the one place that names the engine packages (claim/sqlite
// for bd v0.27-v0.50, claim/dolt for bd v1.3 in server, proxied-server or
// embedded mode). Package claim holds the rules and never asks which
// engine it has: it talks to the seam, package claim/engine.
package engines

import (
	"context"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// Open checks the database the workspace names (a SQLite file, or a Dolt
// database on a server, behind bd's proxy or embedded) and returns a Store
// on it, with the engine of that database. Nothing is written and no file
// is created.
//
//	ws, err := workspace.Find(workspace.Locate{Start: ".", Getenv: os.Getenv})
//	store, err := engines.Open(ctx, ws, claim.Options{})
func Open(ctx context.Context, ws claim.Workspace, o claim.Options) (*claim.Store, error) {
	e, err := open(ctx, ws, o.Config())
	if err != nil {
		return nil, err
	}
	return claim.New(ws, e, o), nil
}

// open opens ws's engine.
func open(ctx context.Context, ws claim.Workspace, c engine.Config) (engine.Engine, error) {
	switch {
	case ws.Dolt != nil:
		return dolt.OpenServer(ctx, *ws.Dolt, ws.BeadsDir, c)
	case ws.Proxied != nil:
		return dolt.OpenProxied(ctx, *ws.Proxied, ws.BeadsDir, c)
	case ws.Embedded != nil:
		return dolt.OpenEmbedded(ctx, *ws.Embedded, ws.BeadsDir, c)
	}
	return sqlite.Open(ctx, ws.DBPath, ws.BeadsDir, c)
}
