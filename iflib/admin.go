package iflib

// The admin task (_task_fn_admin): it performs the resets that the data
// path requests (IFC_DO_RESET), outside the queue tasks, because a reset
// stops those tasks and waits for them.

func (c *Context) startAdmin() {
	c.adminWake = make(chan struct{}, 1)
	c.adminQuit = make(chan struct{})
	c.adminDone = make(chan struct{})
	go func() {
		defer close(c.adminDone)
		for {
			select {
			case <-c.adminQuit:
				return
			case <-c.adminWake:
				c.mu.Lock()
				if c.state == stateRunning {
					// iflib_if_init_locked: stop + init.
					if c.stopLocked() == nil && c.initLocked() == nil {
						c.resets.Add(1)
					}
				}
				c.mu.Unlock()
			}
		}
	}()
}

// stopAdmin ends the admin task.
// Preconditions: c.mu held (the task then cannot be mid-reset).
func (c *Context) stopAdmin() {
	close(c.adminQuit)
	c.mu.Unlock()
	<-c.adminDone
	c.mu.Lock()
}

// requestReset is IFC_DO_RESET + iflib_admin_intr_deferred.
func (c *Context) requestReset(q *rxq) {
	q.st.resets.Add(1)
	select {
	case c.adminWake <- struct{}{}:
	default:
	}
}

// Resets returns how many resets the admin task has done.
func (c *Context) Resets() uint64 { return c.resets.Load() }
