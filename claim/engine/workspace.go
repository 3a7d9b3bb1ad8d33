package engine

import (
	"net"
	"strconv"
)

// What a Dolt workspace resolves to (package claim finds it as bd v1.3.0
// does; package claim/dolt opens it).

// DoltServer is where a Dolt-era Beads database lives (bd v1.3.x server
// mode): a dolt sql-server reached over the MySQL protocol, the database on
// it, and who connects.
type DoltServer struct {
	Host      string `json:"host,omitempty"`
	Port      int    `json:"port,omitempty"`
	Socket    string `json:"socket,omitempty"` // a Unix socket instead of host:port
	User      string `json:"user"`
	Password  string `json:"-"`
	Database  string `json:"database"`
	TLS       bool   `json:"tls,omitempty"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
	// PortFrom says where Port came from, for messages: a variable, the
	// port file, metadata.json, --dsn; "" for bd's default, 3307.
	PortFrom string `json:"-"`
}

// EmbeddedDolt is a Dolt-era Beads database in embedded mode (bd v1.3's
// default): no server, the engine runs inside each process that opens it.
type EmbeddedDolt struct {
	Dir       string `json:"dir"` // .beads/embeddeddolt, which holds the database's directory
	Database  string `json:"database"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
}

// ProxiedDolt is a Dolt-era Beads database in proxied-server mode (bd
// v1.3's `bd init --proxied-server`): a dolt sql-server that bd starts
// behind a proxy of its own, both rooted at Root; clients reach the server
// only through the proxy, on the port its pid file publishes once the proxy
// has proven who it is (claim/dolt VerifyProxy).
type ProxiedDolt struct {
	Root      string `json:"root"` // the proxy's and the server's directory (.beads/dolt by default)
	Database  string `json:"database"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
}

// String names the database in messages, never with the password.
func (d DoltServer) String() string { return "mysql://" + d.User + "@" + d.Addr() + "/" + d.Database }

// Addr is the server's address: its socket, else host:port.
func (d DoltServer) Addr() string {
	if d.Socket != "" {
		return d.Socket
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Remote says whether the server is on another machine than this one.
func (d DoltServer) Remote() bool { return Remote(d.Host) }

// Remote is true for a host other than this machine.
func Remote(host string) bool {
	switch host {
	case "", "localhost", "127.0.0.1", "::1", "[::1]":
		return false
	}
	return true
}

// PortFile is where bd v1.3 writes the port of the server it started
// itself (an "owned" server), relative to the workspace's root; bd deletes
// it when that server stops.
const PortFile = ".beads/dolt-server.port"
