// Engine API calls on networks and volumes.

package testbed

import (
	"context"
	"net/http"
	"net/netip"
)

// networkCreateRequest is the body of POST /networks/create.
type networkCreateRequest struct {
	Name           string
	Driver         string            `json:",omitempty"`
	Internal       bool              `json:",omitempty"`
	CheckDuplicate bool              `json:",omitempty"`
	Labels         map[string]string `json:",omitempty"`
	IPAM           *networkIPAM      `json:",omitempty"`
}

// networkIPAM is a network's address management: its subnets.
type networkIPAM struct {
	Config []ipamConfig
}

// ipamConfig is one subnet of a network.
type ipamConfig struct {
	Subnet string `json:",omitempty"`
}

// networkInfo is the part of GET /networks/{id} the testbed reads.
type networkInfo struct {
	ID   string `json:"Id"`
	Name string
	IPAM networkIPAM
}

// networkCreate creates a network with the testbed's labels (and the
// given subnet, if valid) and returns its ID.
func (e *engine) networkCreate(ctx context.Context, name string, internal bool, subnet netip.Prefix) (string, error) {
	req := networkCreateRequest{Name: name, Driver: "bridge", Internal: internal, CheckDuplicate: true, Labels: labels()}
	if subnet.IsValid() {
		req.IPAM = &networkIPAM{Config: []ipamConfig{{Subnet: subnet.String()}}}
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := e.call(ctx, http.MethodPost, "/networks/create", nil, req, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// networkSubnet returns the first subnet of a network.
func (e *engine) networkSubnet(ctx context.Context, id string) (netip.Prefix, error) {
	var info networkInfo
	if err := e.call(ctx, http.MethodGet, "/networks/"+id, nil, nil, &info); err != nil {
		return netip.Prefix{}, err
	}
	if len(info.IPAM.Config) == 0 || info.IPAM.Config[0].Subnet == "" {
		return netip.Prefix{}, nil
	}
	return netip.ParsePrefix(info.IPAM.Config[0].Subnet)
}

// networkRemove removes a network.
func (e *engine) networkRemove(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodDelete, "/networks/"+id, nil, nil, nil)
}

// networkConnect attaches a container to a network, under aliases and at
// addr if valid.
func (e *engine) networkConnect(ctx context.Context, nw, container string, aliases []string, addr netip.Addr) error {
	ep := &endpointSettings{Aliases: aliases}
	if addr.IsValid() {
		ep.IPAMConfig = &endpointIPAM{IPv4Address: addr.String()}
	}
	body := struct {
		Container      string
		EndpointConfig *endpointSettings
	}{container, ep}
	return e.call(ctx, http.MethodPost, "/networks/"+nw+"/connect", nil, body, nil)
}

// networkDisconnect detaches a container from a network, also a container
// that is not running.
func (e *engine) networkDisconnect(ctx context.Context, nw, container string) error {
	body := struct {
		Container string
		Force     bool
	}{container, true}
	return e.call(ctx, http.MethodPost, "/networks/"+nw+"/disconnect", nil, body, nil)
}

// networkList lists the networks carrying label.
func (e *engine) networkList(ctx context.Context, label string) ([]networkInfo, error) {
	var out []networkInfo
	err := e.call(ctx, http.MethodGet, "/networks", labelFilter(label), nil, &out)
	return out, err
}

// volumeLabels returns the labels of a volume.
func (e *engine) volumeLabels(ctx context.Context, name string) (map[string]string, error) {
	var out struct{ Labels map[string]string }
	err := e.call(ctx, http.MethodGet, "/volumes/"+name, nil, nil, &out)
	return out.Labels, err
}
