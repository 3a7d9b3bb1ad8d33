package claim

import (
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// Workspace is where a claim happens: the Beads directory and its database,
// as workspace.Find finds it.
type Workspace = workspace.Workspace

// DoltServer, EmbeddedDolt and ProxiedDolt are a Dolt workspace's database
// in server, embedded and proxied-server mode (see package workspace).
type (
	DoltServer   = engine.DoltServer
	EmbeddedDolt = engine.EmbeddedDolt
	ProxiedDolt  = engine.ProxiedDolt
)
