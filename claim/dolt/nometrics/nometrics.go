// Package nometrics keeps the embedded Dolt driver from sending its daily
// usage event to DoltHub: bd-claim never phones home. The driver reads
// DOLT_METRICS_DISABLED once, in its own init; this package, which imports
// nothing the driver does not and sorts before it by import path, is
// initialised first (the Go spec's package initialisation order), so
// importing it beside the driver is enough.
package nometrics

import "os"

// Variable is the environment variable the driver reads.
const Variable = "DOLT_METRICS_DISABLED"

func init() { os.Setenv(Variable, "1") }
