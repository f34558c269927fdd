package pubsub

// Payloads and topics of the AI platform's named channels (see Reference
// layouts in docs/pubsub.md). Each topic
// function returns the same topic every time; declare your own with
// MustTopic for other channels or payload types.

// FileUploaded is the payload of pubsub:files:uploaded.
type FileUploaded struct {
	FileID string `json:"file_id"`
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

// FileProcessed is the payload of pubsub:files:processed.
type FileProcessed struct {
	FileID string `json:"file_id"`
	Status string `json:"status"`
}

// AIResponseChunk is the payload of pubsub:ai:response: one streamed chunk.
type AIResponseChunk struct {
	ConversationID string `json:"conversation_id"`
	Chunk          string `json:"chunk"`
}

// WorkflowStarted is the payload of pubsub:workflow:started.
type WorkflowStarted struct {
	ExecutionID string `json:"execution_id"`
	WorkflowID  string `json:"workflow_id"`
}

// WorkflowCompleted is the payload of pubsub:workflow:completed.
type WorkflowCompleted struct {
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
	Result      any    `json:"result"`
}

// SystemNotification is the payload of pubsub:system:notification.
type SystemNotification struct {
	Type     string `json:"type"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// AuditEvent is the payload of pubsub:audit:event.
type AuditEvent struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
	User     string `json:"user"`
}

// TopicFileUploaded is pubsub:files:uploaded: a new file was uploaded.
func TopicFileUploaded() Topic[FileUploaded] { return Topic[FileUploaded]{"files", "uploaded"} }

// TopicFileProcessed is pubsub:files:processed: a file's processing ended.
func TopicFileProcessed() Topic[FileProcessed] { return Topic[FileProcessed]{"files", "processed"} }

// TopicAIResponse is pubsub:ai:response: AI response streaming.
func TopicAIResponse() Topic[AIResponseChunk] { return Topic[AIResponseChunk]{"ai", "response"} }

// TopicWorkflowStarted is pubsub:workflow:started: an execution started.
func TopicWorkflowStarted() Topic[WorkflowStarted] {
	return Topic[WorkflowStarted]{"workflow", "started"}
}

// TopicWorkflowCompleted is pubsub:workflow:completed: an execution ended.
func TopicWorkflowCompleted() Topic[WorkflowCompleted] {
	return Topic[WorkflowCompleted]{"workflow", "completed"}
}

// TopicSystemNotification is pubsub:system:notification.
func TopicSystemNotification() Topic[SystemNotification] {
	return Topic[SystemNotification]{"system", "notification"}
}

// TopicAuditEvent is pubsub:audit:event: real-time audit events.
func TopicAuditEvent() Topic[AuditEvent] { return Topic[AuditEvent]{"audit", "event"} }
