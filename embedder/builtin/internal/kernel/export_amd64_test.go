//go:build amd64 && !purego

package kernel

// PickKernel is pickKernel, for tests of every CPU's choice on this one.
func PickKernel(want string, avx512, avx2 bool) string { return pickKernel(want, avx512, avx2) }

// PickQKernel is pickQKernel.
func PickQKernel(want string, vnni, avx2 bool) string { return pickQKernel(want, vnni, avx2) }
