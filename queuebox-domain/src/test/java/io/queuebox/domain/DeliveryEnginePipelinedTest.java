package io.queuebox.domain;

/**
 * Every test of {@link DeliveryEngineTest} against pipelined workers ({@code pipelineDepth} 2: a claimer and its
 * publish stage); {@link DeliveryEngineTest} itself runs the default, the serial loop.
 */
class DeliveryEnginePipelinedTest extends DeliveryEngineTest {

    @Override
    int depth() {
        return 2;
    }
}
