//go:build !unix

package cli

// noFollow is no flag: Windows' temporary directory is the user's own.
const noFollow = 0
