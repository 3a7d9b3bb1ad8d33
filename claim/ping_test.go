//go:build !embedded

package claim_test

import (
	"context"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// Ping runs the checks that Open leaves to the first operation: an
// embedded Dolt workspace, which this build (without the engine) cannot
// open, opens (Open defers the engine) but does not ping; a SQLite
// workspace, checked by Open, pings.
func TestPing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := claimtest.Tree(t, map[string]string{"ws/.git/": "", "ws/.beads/embeddeddolt/em/": "",
		"ws/.beads/metadata.json": `{"backend":"dolt","dolt_mode":"embedded","dolt_database":"em"}`})
	ws, err := workspace.Find(workspace.Locate{Start: filepath.Join(dir, "ws"), Getenv: claimtest.Env()})
	assert.NilError(t, err)
	s, err := engines.Open(ctx, ws, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	err = s.Ping(ctx)
	assert.Equal(t, claim.ErrorCode(err), claim.ESchema, "%v", err)
	assert.ErrorContains(t, err, "could not open "+ws.DBPath+": ")

	ws, err = workspace.Find(workspace.Locate{Start: claimtest.Fixture(t, "0.49.6"), Getenv: claimtest.Env()})
	assert.NilError(t, err)
	s, err = engines.Open(ctx, ws, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	assert.NilError(t, s.Ping(ctx))
}
