package io.queuebox.kafka;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import io.queuebox.testkit.architecture.AdapterModuleRules;

/**
 * The module rules of ARCHITECTURE.md on this adapter's main classes. The rules allow an empty module; the
 * testkit's QueueBoxArchitectureRulesTest proves that each of them fails on a bad fixture.
 */
@AnalyzeClasses(packages = "io.queuebox.kafka", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AdapterModuleRules.class);
}
