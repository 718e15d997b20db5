import './base.css';
import './approvals.css';
import './tasks.css';
import './reminders.css';
import './untrusted.css';
import './cells.css';
import './skills.css';
import './rewind.css';
