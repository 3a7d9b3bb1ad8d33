// Package workspace finds a Beads workspace as bd finds it: the .beads
// directory and the database in it, down to which engine holds it and that
// engine's settings (a bd v0.27-v0.50 SQLite file, or a bd v1.3 Dolt
// database on a server, behind bd's proxy, or embedded). It opens nothing
// and creates nothing: package engines opens what it found.
package workspace

import "github.com/bdclaim/bd-claim/claim/engine"

// Workspace is where a claim happens: the Beads directory and its database.
type Workspace struct {
	Root     string `json:"workspace_root,omitempty"` // the directory that holds .beads ("" when the database was named directly)
	BeadsDir string `json:"beads_dir,omitempty"`
	DBPath   string `json:"db_path"` // the SQLite file, or the Dolt server's database as mysql://user@host:port/database
	Source   string `json:"source"`  // which rule found it: --db, BD_DB, --dsn, BD_CLAIM_DSN, BEADS_DIR, BEADS_DB or walk
	// Dolt is the server of a Dolt workspace (bd v1.3.x server mode);
	// Embedded the database of one in embedded mode (bd v1.3's default).
	// Both are nil for a SQLite workspace.
	Dolt     *DoltServer   `json:"dolt_server,omitempty"`
	Embedded *EmbeddedDolt `json:"dolt_embedded,omitempty"`
	// Proxied is the database of one in proxied-server mode (bd v1.3's
	// `bd init --proxied-server`), reached through the workspace's proxy.
	Proxied *ProxiedDolt `json:"dolt_proxied,omitempty"`
}

// DoltServer is where a Dolt-era Beads database lives (bd v1.3.x server
// mode): a dolt sql-server reached over the MySQL protocol, the database on
// it, and who connects.
type DoltServer = engine.DoltServer

// EmbeddedDolt is a Dolt-era Beads database in embedded mode (bd v1.3's
// default): no server, the engine runs inside each process that opens it.
type EmbeddedDolt = engine.EmbeddedDolt

// ProxiedDolt is a Dolt-era Beads database in proxied-server mode (bd
// v1.3's `bd init --proxied-server`), reached through the workspace's
// proxy.
type ProxiedDolt = engine.ProxiedDolt
