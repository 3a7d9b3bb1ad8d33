//go:build embedded

package cli_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// embeddedTwin is a workspace of bd's default mode, embedded Dolt, the
// fixture imported and the wisps added. Its database is opened only to be
// read or written, while no bd runs.
func embeddedTwin(t *testing.T) bdTwin {
	w := claimtest.EmbeddedWorkspace(t, "ej")
	importFixture(t, &w.BdRunner, "ej", true, true)
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	view := func(fn func(conn *sql.Conn)) {
		conn, end, err := dolt.OpenEmbeddedConn(context.Background(), ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
		assert.NilError(t, err)
		defer end()
		fn(conn)
	}
	view(func(conn *sql.Conn) { addWisps(t, conn, "ej") })
	return bdTwin{prefix: "ej", dir: w.Dir, env: w.Env, v13: true,
		as: func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner },
		held: func(id string) (held map[string]string) {
			view(func(conn *sql.Conn) { held = doltHeld(t, conn, id) })
			return held
		},
		oldValue: func(id string) (old string) {
			view(func(conn *sql.Conn) { old = doltOldValue(t, conn, id) })
			return old
		}}
}

func TestEmbeddedBdJSONParity(t *testing.T) {
	bdJSONParity(t, embeddedTwin(t), embeddedTwin(t), bdJSONDoltOrder)
}
