package simnic

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"
)

// The PHY: autonegotiation (IEEE 802.3 clause 28 and 37: the abilities a
// station advertises, the link partner's, the highest common mode, and
// flow control resolved by Annex 28B's PAUSE/ASM_DIR table, as
// e1000_config_fc_after_link_up does), or a forced speed and duplex; and
// 802.3x flow control on receive: an XOFF pauses the transmitter for its
// quanta of 512 bit times at the link speed, an XON (quanta 0) ends the
// pause; both are counted (XOFFRXC, XONRXC) and consumed by the MAC
// whether or not receive flow control is on (RFCE: it acts only then).

// Ability is a set of PHY abilities: speeds with duplex, and the pause
// bits (ANAR's PAUSE and ASM_DIR).
type Ability uint32

// PHY abilities, lowest speed first.
const (
	Ability10HD Ability = 1 << iota
	Ability10FD
	Ability100HD
	Ability100FD
	Ability1000FD
	Ability2500FD
	Ability10GFD
	Ability25GFD
	Ability40GFD
	Ability100GFD
	// AbilityPause is symmetric PAUSE (ANAR bit 10); AbilityAsymPause is
	// ASM_DIR (bit 11).
	AbilityPause
	AbilityAsymPause

	// AbilitySpeeds are the speed and duplex abilities.
	AbilitySpeeds = Ability10HD | Ability10FD | Ability100HD | Ability100FD | Ability1000FD |
		Ability2500FD | Ability10GFD | Ability25GFD | Ability40GFD | Ability100GFD
	// AbilitiesAll is every ability: the default of Config.Abilities and of
	// the link partner.
	AbilitiesAll = AbilitySpeeds | AbilityPause | AbilityAsymPause
)

var abilityNames = [...]string{"10baseT-HD", "10baseT-FD", "100baseTX-HD", "100baseTX-FD", "1000base-FD",
	"2500base-FD", "10Gbase-FD", "25Gbase-FD", "40Gbase-FD", "100Gbase-FD", "PAUSE", "ASM_DIR"}

func (a Ability) String() string {
	s := ""
	for i, name := range abilityNames {
		if a&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += name
		}
	}
	if a&^AbilitiesAll != 0 {
		s += fmt.Sprintf("|%#x", uint32(a&^AbilitiesAll))
	}
	if s == "" {
		return "none"
	}
	return s
}

// Speed returns the bits/s of a's highest speed ability (0: none).
func (a Ability) Speed() uint64 {
	a &= AbilitySpeeds
	if a == 0 {
		return 0
	}
	return abilitySpeeds[bits.Len32(uint32(a))-1]
}

// FullDuplex reports whether a's highest speed ability is full duplex.
func (a Ability) FullDuplex() bool {
	a &= AbilitySpeeds
	top := Ability(1) << (bits.Len32(uint32(a)) - 1)
	return a != 0 && top&(Ability10HD|Ability100HD) == 0
}

var abilitySpeeds = [...]uint64{10e6, 10e6, 100e6, 100e6, 1e9, 2.5e9, 10e9, 25e9, 40e9, 100e9}

// PHYControl is how the driver sets the PHY up (MII control and the
// advertisement registers; em's hw.mac.autoneg, phy.autoneg_advertised,
// mac.forced_speed_duplex and fc.requested_mode).
type PHYControl struct {
	// Autoneg: negotiate with the partner, offering Advertise. Otherwise
	// the link runs at the one speed ability in Advertise (a forced mode),
	// if the partner has it, with flow control as Advertise's pause bits
	// ask: PAUSE both ways, ASM_DIR alone transmit only.
	Autoneg   bool
	Advertise Ability
}

// PHYStatus is the resolved link (STATUS.LU, SPEED, FD; the negotiated
// flow control).
type PHYStatus struct {
	Link     bool    // link up (carrier and a common mode)
	Mode     Ability // the resolved speed and duplex ability (0: none)
	Speed    uint64  // bits/s
	Duplex   bool    // full duplex
	RxPause  bool    // honour received PAUSE frames (RFCE; IFM_ETH_RXPAUSE)
	TxPause  bool    // may send PAUSE frames (TFCE; IFM_ETH_TXPAUSE)
	Autoneg  bool    // the mode was negotiated
	Partner  Ability // the link partner's abilities
	Resolved bool    // a common mode exists (the link comes up with the carrier)
}

// resolvePHY computes the link mode for a PHY with abilities own under
// ctl facing partner.
func resolvePHY(own Ability, ctl PHYControl, partner Ability) PHYStatus {
	st := PHYStatus{Autoneg: ctl.Autoneg, Partner: partner}
	if !ctl.Autoneg {
		m := ctl.Advertise & AbilitySpeeds & own & partner
		if m == 0 {
			return st
		}
		st.Mode, st.Resolved = m, true
		switch {
		case ctl.Advertise&AbilityPause != 0:
			st.RxPause, st.TxPause = true, true
		case ctl.Advertise&AbilityAsymPause != 0:
			st.TxPause = true
		}
	} else {
		common := ctl.Advertise & own & partner & AbilitySpeeds
		if common == 0 {
			return st
		}
		st.Mode, st.Resolved = Ability(1)<<(bits.Len32(uint32(common))-1), true
		// IEEE 802.3 Annex 28B, Table 28B-3 (pause resolution).
		lp, la := ctl.Advertise&AbilityPause != 0, ctl.Advertise&AbilityAsymPause != 0
		rp, ra := partner&AbilityPause != 0, partner&AbilityAsymPause != 0
		switch {
		case lp && rp:
			st.RxPause, st.TxPause = true, true
		case !lp && la && rp && ra:
			st.TxPause = true
		case lp && la && !rp && ra:
			st.RxPause = true
		}
	}
	st.Speed, st.Duplex = st.Mode.Speed(), st.Mode.FullDuplex()
	if !st.Duplex {
		st.RxPause, st.TxPause = false, false // 802.3x flow control is full duplex only
	}
	return st
}

// SetPHY programs the PHY and renegotiates: the link follows the new
// resolution (down when no common mode exists), and a change of the
// resolved mode latches the link interrupt. A control with no speed
// ability, a forced control with more than one, or abilities outside
// Config.Abilities is a *ConfigError.
func (n *NIC) SetPHY(ctl PHYControl) error {
	sp := ctl.Advertise & AbilitySpeeds
	switch {
	case ctl.Advertise&^AbilitiesAll != 0:
		return &ConfigError{Pkg: "simnic", Field: "phy", Value: ctl.Advertise, Reason: "unknown abilities"}
	case sp == 0:
		return &ConfigError{Pkg: "simnic", Field: "phy", Value: ctl.Advertise, Reason: "no speed ability"}
	case !ctl.Autoneg && bits.OnesCount32(uint32(sp)) != 1:
		return &ConfigError{Pkg: "simnic", Field: "phy", Value: ctl.Advertise, Reason: "a forced mode names exactly one speed ability"}
	case ctl.Advertise&^n.cfg.Abilities&AbilitySpeeds != 0:
		return &ConfigError{Pkg: "simnic", Field: "phy", Value: ctl.Advertise, Reason: fmt.Sprintf("beyond the PHY's abilities %v", n.cfg.Abilities)}
	}
	n.linkMu.Lock()
	n.phyCtl = ctl
	n.renegotiateLocked()
	n.linkMu.Unlock()
	return nil
}

// PHY returns the PHY's control.
func (n *NIC) PHY() PHYControl {
	n.linkMu.Lock()
	defer n.linkMu.Unlock()
	return n.phyCtl
}

// SetLinkPartner sets the abilities the far end advertises (as plugging
// into another switch port would) and renegotiates.
func (n *NIC) SetLinkPartner(a Ability) {
	n.linkMu.Lock()
	n.partner = a & AbilitiesAll
	n.renegotiateLocked()
	n.linkMu.Unlock()
}

// PHYStatus returns the resolved link without counting a status read.
func (n *NIC) PHYStatus() PHYStatus {
	n.linkMu.Lock()
	defer n.linkMu.Unlock()
	st := n.phySt
	st.Link = n.linkUp.Load()
	return st
}

// renegotiateLocked resolves the PHY again and applies it to the link.
// Preconditions: linkMu held.
func (n *NIC) renegotiateLocked() {
	st := resolvePHY(n.cfg.Abilities, n.phyCtl, n.partner)
	changed := st != n.phySt
	n.phySt = st
	n.linkSpeed.Store(st.Speed)
	n.rxPauseOn.Store(st.RxPause)
	if !st.RxPause {
		n.pauseUntil.Store(0)
	}
	if !n.applyLinkLocked() && changed {
		n.lsc.Store(true) // a new speed on a link that stayed up
		n.wake()
	}
}

// Pause (802.3x) on the transmitter.

// rxPauseFrame is the MAC taking a PAUSE frame from the wire.
func (n *NIC) rxPauseFrame(f []byte) {
	n.pause(binary.BigEndian.Uint16(f[16:18]))
}

// pause acts on a received PAUSE with quanta q (an XOFF; 0 is an XON):
// counted always, acted on with receive flow control.
func (n *NIC) pause(q uint16) {
	if q == 0 {
		n.st.rxXon.Add(1)
	} else {
		n.st.rxXoff.Add(1)
	}
	if !n.rxPauseOn.Load() {
		return
	}
	if q == 0 {
		n.pauseUntil.Store(0)
		n.wake()
		return
	}
	speed := max(n.linkSpeed.Load(), 1)
	d := time.Duration(uint64(q) * 512 * uint64(time.Second) / speed)
	n.pauseUntil.Store(time.Now().Add(d).UnixNano())
	n.st.txPauses.Add(1)
}

// pausedFor returns how long the transmitter stays paused (0: not).
func (n *NIC) pausedFor() time.Duration {
	u := n.pauseUntil.Load()
	if u == 0 {
		return 0
	}
	left := time.Duration(u - time.Now().UnixNano())
	if left <= 0 {
		n.pauseUntil.CompareAndSwap(u, 0)
		return 0
	}
	return left
}
