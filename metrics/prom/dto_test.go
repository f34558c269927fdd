package prom

import dto "github.com/prometheus/client_model/go"

var dtoMetric dto.Metric
