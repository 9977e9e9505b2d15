package io.queuebox.domain;

/** Every test of {@link DeliveryEngineTest} against the serial loop ({@code pipelineDepth} 1, on the worker thread). */
class DeliveryEngineSerialTest extends DeliveryEngineTest {

    @Override
    int depth() {
        return 1;
    }
}
