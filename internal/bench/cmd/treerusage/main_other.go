//go:build !linux

package main

import "os"

func main() {
	os.Stderr.WriteString("treerusage: needs Linux (PR_SET_CHILD_SUBREAPER)\n")
	os.Exit(125)
}
