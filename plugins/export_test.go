package plugins

// SetBeforeExec installs a hook that runs between the pin check and the
// exec of every start.
func SetBeforeExec(o *Options, f func()) { o.beforeExec = f }

// UsePrivateCopy selects the portable pinned copy instead of the memfd
// and returns a function that restores the default.
func UsePrivateCopy() (restore func()) {
	usePrivateCopy = true
	return func() { usePrivateCopy = false }
}
