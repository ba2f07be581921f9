package kernel

// Kernels lists the micro-kernels this CPU can run, the portable one first.
func Kernels() []string {
	out := []string{"go"}
	switch kernelName {
	case "avx512":
		out = append(out, "avx2", "avx512")
	case "avx2":
		out = append(out, "avx2")
	case "neon":
		out = append(out, "neon")
	}
	return out
}

// UseKernel switches the micro-kernel and returns a function restoring the
// previous one. Tests using it must not run in parallel.
func UseKernel(name string) (restore func()) {
	old := kernelName
	kernelName = name
	return func() { kernelName = old }
}

// QKernels lists the int8 micro-kernels this CPU can run, the portable one
// first.
func QKernels() []string {
	switch qKernelName {
	case "avx512vnni":
		return []string{"go", "avx2", "avx512vnni"}
	case "avx2":
		return []string{"go", "avx2"}
	case "neon":
		return []string{"go", "neon"}
	}
	return []string{"go"}
}

// UseQKernel switches the int8 micro-kernel and returns a function
// restoring the previous one. Tests using it must not run in parallel.
func UseQKernel(name string) (restore func()) {
	old := qKernelName
	qKernelName = name
	return func() { qKernelName = old }
}
