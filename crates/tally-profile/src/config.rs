//! vertebrae's `ResourceProfilingConfig`: what a benchmark run asks to be
//! measured, with its checks, and the [`ProfilerConfig`] it gives.

use std::num::NonZeroU64;

use tally_core::ValidationError;

use crate::ProfilerConfig;

/// vertebrae 1.1.0's `vertebrae.config.ResourceProfilingConfig`: opt-in
/// measurement of extraction cost and representation footprint. Built by
/// [`ResourceProfilingConfig::new`], which applies vertebrae's value checks
/// (its type checks are the caller's: here the types say it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceProfilingConfig {
    /// Whether anything is measured (vertebrae's default: `false`).
    pub enabled: bool,
    /// Track the process's resident set.
    pub host_memory: bool,
    /// Ask the adapter for allocator peaks.
    pub device_memory: bool,
    /// Measure persisted embedding storage.
    pub persisted_storage: bool,
    /// Period of vertebrae's RSS sampler (tally's fallback sampler), seconds.
    pub host_sample_interval_seconds: f64,
    /// Quality tolerance of compressed variants (not a profiler setting).
    pub quality_tolerance: f64,
}

impl Default for ResourceProfilingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            host_memory: true,
            device_memory: true,
            persisted_storage: true,
            host_sample_interval_seconds: 0.01,
            quality_tolerance: 0.01,
        }
    }
}

impl ResourceProfilingConfig {
    /// vertebrae's checks, in its order: both reals finite, the sampling
    /// interval positive, the tolerance non-negative.
    pub fn new(
        enabled: bool,
        host_memory: bool,
        device_memory: bool,
        persisted_storage: bool,
        host_sample_interval_seconds: f64,
        quality_tolerance: f64,
    ) -> Result<Self, ValidationError> {
        const PREFIX: &str = "ResourceProfilingConfig";
        for (name, value) in [
            ("host_sample_interval_seconds", host_sample_interval_seconds),
            ("quality_tolerance", quality_tolerance),
        ] {
            if !value.is_finite() {
                return Err(ValidationError::new(name, format!("{PREFIX}.{name} must be finite.")));
            }
        }
        if host_sample_interval_seconds <= 0.0 {
            return Err(ValidationError::new(
                "host_sample_interval_seconds",
                format!("{PREFIX}.host_sample_interval_seconds must be > 0."),
            ));
        }
        if quality_tolerance < 0.0 {
            return Err(ValidationError::new(
                "quality_tolerance",
                format!("{PREFIX}.quality_tolerance must be >= 0."),
            ));
        }
        Ok(Self {
            enabled,
            host_memory,
            device_memory,
            persisted_storage,
            host_sample_interval_seconds,
            quality_tolerance,
        })
    }

    /// What the profiler measures under this config; the sampling interval
    /// rounded to whole nanoseconds (at least one).
    pub fn profiler_config(&self) -> ProfilerConfig {
        let nanoseconds = (self.host_sample_interval_seconds * 1e9).round();
        // Finite and positive by construction; `as` saturates beyond u64.
        let interval = NonZeroU64::new(nanoseconds as u64).unwrap_or(NonZeroU64::MIN);
        ProfilerConfig {
            enabled: self.enabled,
            host_memory: self.host_memory,
            device_memory: self.device_memory,
            host_sample_interval_ns: interval,
            ..ProfilerConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertebraes_checks_in_its_order() {
        let message = |interval: f64, tolerance: f64| {
            ResourceProfilingConfig::new(true, true, true, true, interval, tolerance)
                .expect_err("invalid")
                .message()
                .to_owned()
        };
        assert_eq!(
            message(f64::NAN, -1.0),
            "ResourceProfilingConfig.host_sample_interval_seconds must be finite."
        );
        assert_eq!(message(0.01, f64::INFINITY), "ResourceProfilingConfig.quality_tolerance must be finite.");
        assert_eq!(message(0.0, -1.0), "ResourceProfilingConfig.host_sample_interval_seconds must be > 0.");
        assert_eq!(message(0.01, -0.5), "ResourceProfilingConfig.quality_tolerance must be >= 0.");
        let config = ResourceProfilingConfig::new(true, false, true, true, 0.005, 0.0).expect("valid");
        let profiler = config.profiler_config();
        assert_eq!(profiler.host_sample_interval_ns.get(), 5_000_000);
        assert!(profiler.enabled && !profiler.host_memory);
        assert!(!ResourceProfilingConfig::default().profiler_config().enabled);
    }
}
