// Package layers holds the one table of which gotrace package may depend on
// which, and the test that holds the tree to it (as Go's go/build keeps
// the standard library's layering in one table). It has no code: the
// rules are in layers_test.go, each with the reason the layer exists.
package layers
