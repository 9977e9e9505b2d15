/**
 * Test support for QueueBox adapters and for applications that use QueueBox: fakes that behave
 * ({@code outbox.InMemoryOutboxStore}, {@code publisher.RecordingPublisher}, {@code inbox.InMemoryInbox}, the
 * {@code capture} fakes,
 * {@link io.queuebox.testkit.MutableClock}), intention-revealing fixtures ({@code fixtures.OutboxFixtures}),
 * the port contract suites ({@code outbox.OutboxStoreContract}, {@code publisher.MessagePublisherContract},
 * {@code inbox.InboxContract})
 * and the architecture rules ({@code architecture.QueueBoxArchitecture}).
 *
 * <p>JUnit 5, AssertJ, Awaitility and ArchUnit are compile dependencies of this module: add it in test scope.
 */
package io.queuebox.testkit;
