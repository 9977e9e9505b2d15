package io.queuebox.spring;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import io.queuebox.testkit.architecture.AllRules;
import io.queuebox.testkit.architecture.QueueBoxArchitecture;

/** The starter obeys every module rule: among them, no database adapter named, no CLI, logging backend or test framework. */
@AnalyzeClasses(packages = QueueBoxArchitecture.ROOT, importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AllRules.class);
}
