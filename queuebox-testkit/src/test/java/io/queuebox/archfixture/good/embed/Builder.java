package io.queuebox.archfixture.good.embed;

import io.queuebox.archfixture.good.ports.Port;

/** An embedding builder that only wires ports. */
public final class Builder {
    private Port port;

    public Builder port(Port port) {
        this.port = port;
        return this;
    }
}
