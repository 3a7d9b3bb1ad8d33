package dolt

import (
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// unreachable says of a server that cannot be reached where it was looked
// for and why there, and what to do; beadsDir is its workspace's .beads
// ("" for a --dsn connection). A local workspace's server is started with
// `bd dolt start` (bd v1.3.0 starts it on a port the system picks and
// writes that port to .beads/dolt-server.port, which it deletes when the
// server stops); bd-claim never starts one.
func unreachable(d *engine.DoltServer, beadsDir string) string {
	if d.Socket != "" {
		return fmt.Sprintf("the Dolt server cannot be reached on the socket %s: is `dolt sql-server --socket %s` running? Then retry", d.Socket, d.Socket)
	}
	msg := "the Dolt server cannot be reached at " + d.Addr()
	local := beadsDir != "" && !d.Remote()
	switch {
	case d.PortFrom != "":
		msg += " (the port from " + d.PortFrom + ")"
	case local:
		msg += ", bd's default port, tried because " + engine.PortFile + " is missing (bd deletes it when the server it started stops) and nothing else names a port"
	default:
		msg += ", bd's default port (nothing names another)"
	}
	if local {
		return msg + ": start the workspace's server with `bd dolt start`, then retry"
	}
	return msg + ": is `dolt sql-server` running there, and reachable from this machine? Then retry"
}

// config is the driver configuration bd itself connects with
// (doltutil.ServerDSN): parsed times, parameters interpolated client-side
// (one round trip per statement), a 5s dial timeout, 10s reads and writes,
// TLS only when asked for.
func config(d *engine.DoltServer) *mysql.Config {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.DBName = d.User, d.Password, d.Database
	c.Net, c.Addr = "tcp", d.Addr()
	if d.Socket != "" {
		c.Net = "unix"
	}
	c.ParseTime, c.InterpolateParams, c.AllowNativePasswords = true, true, true
	c.Timeout, c.ReadTimeout, c.WriteTimeout = 5*time.Second, 10*time.Second, 10*time.Second
	c.Logger = &mysql.NopLogger{} // the driver's own log lines would break bd-claim's stderr; its errors are returned anyway
	c.TLSConfig = "false"
	if d.TLS {
		c.TLSConfig = "true"
	}
	return c
}
