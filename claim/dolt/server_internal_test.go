package dolt

import (
	"testing"

	"github.com/bdclaim/bd-claim/claim/engine"
	"gotest.tools/v3/assert"
)

// A server that cannot be reached is named with where it was looked for and
// why there; a local workspace's is started with bd dolt start, which
// bd-claim never runs.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		d        engine.DoltServer
		beadsDir string
		want     string
	}{
		{"bd's default port, for want of the port file", engine.DoltServer{Host: "127.0.0.1", Port: 3307}, "/w/.beads",
			"the Dolt server cannot be reached at 127.0.0.1:3307, bd's default port, tried because .beads/dolt-server.port is missing " +
				"(bd deletes it when the server it started stops) and nothing else names a port: start the workspace's server with `bd dolt start`, then retry"},
		{"the port file", engine.DoltServer{Host: "localhost", Port: 41234, PortFrom: ".beads/dolt-server.port"}, "/w/.beads",
			"the Dolt server cannot be reached at localhost:41234 (the port from .beads/dolt-server.port): start the workspace's server with `bd dolt start`, then retry"},
		{"a remote server on bd's default port", engine.DoltServer{Host: "db.example.com", Port: 3307}, "/w/.beads",
			"the Dolt server cannot be reached at db.example.com:3307, bd's default port (nothing names another): " +
				"is `dolt sql-server` running there, and reachable from this machine? Then retry"},
		{"a remote server's port", engine.DoltServer{Host: "db.example.com", Port: 3310, PortFrom: "BEADS_DOLT_SERVER_PORT"}, "/w/.beads",
			"the Dolt server cannot be reached at db.example.com:3310 (the port from BEADS_DOLT_SERVER_PORT): is `dolt sql-server` running there, and reachable from this machine? Then retry"},
		{"--dsn, no workspace", engine.DoltServer{Host: "127.0.0.1", Port: 1, PortFrom: "--dsn"}, "",
			"the Dolt server cannot be reached at 127.0.0.1:1 (the port from --dsn): is `dolt sql-server` running there, and reachable from this machine? Then retry"},
		{"a socket", engine.DoltServer{Host: "127.0.0.1", Port: 3307, Socket: "/run/dolt.sock"}, "/w/.beads",
			"the Dolt server cannot be reached on the socket /run/dolt.sock: is `dolt sql-server --socket /run/dolt.sock` running? Then retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, unreachable(&tc.d, tc.beadsDir), tc.want)
		})
	}
}
