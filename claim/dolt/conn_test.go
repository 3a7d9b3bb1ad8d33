package dolt

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// A database without a recorded project id opens when the workspace names
// none, and is refused as another project's when it names one.
func TestCheckWithoutProjectID(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	w := srv.Workspace(t, "np")
	conn := w.DB(t)
	ctx := context.Background()
	_, err := conn.ExecContext(ctx, "DELETE FROM metadata WHERE `key` = '_project_id'")
	assert.NilError(t, err)
	assert.NilError(t, Check(ctx, conn, Expect{Schema: 66, Server: "s"}))
	err = Check(ctx, conn, Expect{Schema: 66, ProjectID: "p-1", Server: "s", MetadataDir: "d"})
	var r *Refusal
	assert.Assert(t, errors.As(err, &r), "%v", err)
	assert.ErrorContains(t, err, `project identity mismatch: s holds project "", but d/metadata.json names "p-1"`)
}
