package io.queuebox.jdbc;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import com.tngtech.archunit.lang.ArchRule;
import io.queuebox.testkit.architecture.AdapterModuleRules;
import io.queuebox.testkit.architecture.QueueBoxArchitecture;

/**
 * The module rules of ARCHITECTURE.md on the shared SQL adapter support. The rules allow an empty module; the
 * testkit's QueueBoxArchitectureRulesTest proves that each of them fails on a bad fixture.
 */
@AnalyzeClasses(packages = "io.queuebox.jdbc", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AdapterModuleRules.class);

    @ArchTest
    static final ArchRule adapter_support_depends_on_no_adapter = QueueBoxArchitecture.adapter_support_depends_on_no_adapter;
}
