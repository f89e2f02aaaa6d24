// Package sub holds the innermost link of the inline chain, so inlined frames cross a package and
// a file (a second compile unit in the pclntab's cutab).
package sub

// Leaf is small enough for the compiler to inline into callers in other packages; the call through
// f then becomes a direct call of the function main passes.
func Leaf(x int, f func(int) int) int {
	return f(x*3) + 1
}
