//go:build arm64 && !purego

package kernel

// PickQKernelARM is pickQKernelARM.
func PickQKernelARM(want string, dotprod bool) string { return pickQKernelARM(want, dotprod) }
