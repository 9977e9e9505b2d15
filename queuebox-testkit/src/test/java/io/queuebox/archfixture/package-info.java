/**
 * Fixture packages for the architecture rules: {@code good} follows every rule, {@code bad} breaks each
 * rule at least once, {@code cycle} holds two modules that depend on each other. Never production code.
 */
package io.queuebox.archfixture;
